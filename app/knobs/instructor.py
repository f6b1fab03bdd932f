"""The instructor's token: the lesson's, not one incarnation's, so the address printed at start-up turns the knobs
after every death and restart of the box.

The box's supervisor draws it once into a file only this account may read (mode 0600, under data/ unless
`LAB_INSTRUCTOR_TOKEN_FILE` says where) and hands the file to every server it starts; a later `just serve`
finds it there too. A file that is not a private regular file holding a token is refused, in one line,
and replaced by a fresh one. A server given no file (a bare `python -m app.serve`, the tests) draws its
own token, as it always did: it lasts as long as that process.
"""

import logging
import os
import re
import secrets
from pathlib import Path

from app.datafile import Unreadable, read_bytes

log = logging.getLogger(__name__)

TOKEN_FILE_MAX_BYTES = 1024
TOKEN = re.compile(r"[A-Za-z0-9_-]{16,200}")  # what `draw` makes (URL-safe base64), with room for longer ones


def draw() -> str:
    return secrets.token_urlsafe(18)


def instructor_token(file: Path | None) -> str:
    """The token in `file` (drawn there first if it has none); drawn for this process alone without a file,
    or when the file cannot be written."""
    return (kept_token(file) if file is not None else None) or draw()


def kept_token(file: Path) -> str | None:
    """The token `file` keeps, or a fresh one written there (0600); None if the file cannot be written (logged)."""
    try:
        text = read_bytes(file, TOKEN_FILE_MAX_BYTES, private=True).decode("ascii", "replace").strip()
    except FileNotFoundError:
        return create(file)
    except Unreadable as exc:
        return replace(file, str(exc))
    return text if TOKEN.fullmatch(text) else replace(file, "it holds no token")


def create(file: Path) -> str | None:
    """A fresh token in a new file; if another box created it meanwhile, theirs."""
    token = draw()
    try:
        file.parent.mkdir(parents=True, exist_ok=True)
        temporary = private_file(file, token)
        try:
            os.link(temporary, file)  # never over a file another start wrote a moment ago
        finally:
            temporary.unlink()
    except FileExistsError:
        return kept_token(file)
    except OSError as exc:
        log.warning("Cannot keep the instructor token in %s (%s): it lasts this process only.", file, describe(exc))
        return None
    return token


def replace(file: Path, why: str) -> str | None:
    token = draw()
    temporary: Path | None = None
    try:
        temporary = private_file(file, token)
        os.replace(temporary, file)
    except OSError as exc:
        if temporary is not None:
            temporary.unlink(missing_ok=True)
        log.warning("Refusing the instructor token file %s (%s) and cannot replace it (%s).", file, why, describe(exc))
        return None
    log.warning("Refusing the instructor token file %s (%s): a fresh token is in its place.", file, why)
    return token


def private_file(beside: Path, token: str) -> Path:
    """`token` in a new file readable by this account only, in `beside`'s folder (so a rename is atomic)."""
    temporary = beside.with_name(f".{beside.name}.{secrets.token_hex(6)}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        os.write(fd, f"{token}\n".encode("ascii"))
        os.fsync(fd)
    except OSError:
        os.close(fd)
        temporary.unlink(missing_ok=True)
        raise
    os.close(fd)
    return temporary


def describe(exc: OSError) -> str:
    return exc.strerror or str(exc)
