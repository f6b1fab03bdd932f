"""The instructor's token: the lesson's, not one incarnation's, so the address printed at start-up turns the knobs
after every death and restart of the box.

The box's supervisor draws it once into a file only this account may read (mode 0600, under data/ unless
`LAB_INSTRUCTOR_TOKEN_FILE` says where) and hands the file to every server it starts; a later start finds it
there too. The box writes only a file it creates: one already there is used only if it is a token file (a
regular file this account owns, not a link, one line of the token's shape), and one with loose permissions
is tightened to 0600 with its token kept, so an address printed earlier keeps working. Anything else in its
place (notes, a knobs.json, a big file, a link, a folder) is someone's, not the box's: the start stops with one
line naming it (`TokenFileRefused`). A server given no file (a bare `python -m app.serve`, the tests) draws its
own token, as it always did: it lasts as long as that process.
"""

import logging
import os
import re
import secrets
from pathlib import Path

from app.datafile import Unreadable, loose_mode, opened
from app.settings import PROJECT_ROOT

log = logging.getLogger(__name__)

TOKEN_FILE = PROJECT_ROOT / "data" / "instructor-token"  # the box's, unless LAB_INSTRUCTOR_TOKEN_FILE names another
TOKEN_FILE_MAX_BYTES = 1024
TOKEN = re.compile(r"[A-Za-z0-9_-]{16,200}")  # what `draw` makes (URL-safe base64), with room for longer ones
TOKEN_LINE = re.compile(rb"([A-Za-z0-9_-]{16,200})\r?\n?")  # a token file's whole content
CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class TokenFileRefused(Exception):
    """The token file's path holds something that is not a token file: the start stops. The message is one line."""


def draw() -> str:
    return secrets.token_urlsafe(18)


def instructor_token(file: Path | None) -> str:
    """The token in `file` (drawn there first if there is no file yet); drawn for this process alone without a
    file, or when the file cannot be created. TokenFileRefused if something else is there."""
    return (kept_token(file) if file is not None else None) or draw()


def lesson_token(file: Path, own_folder: Path) -> tuple[Path, str]:
    """The token file every incarnation of the box reads, and its token: `file`, else one in the starter's own
    private folder (a token for its lifetime, when `file` cannot be created). TokenFileRefused if `file` is
    someone else's."""
    token = kept_token(file)
    if token is None:
        file = own_folder / "instructor-token"
        token = kept_token(file) or ""
    return file, token


def kept_token(file: Path) -> str | None:
    """The token `file` keeps (its mode tightened to 0600 if loose), or a fresh one in a new file; None if the
    file cannot be created (logged). TokenFileRefused if the file is there and is not a token file."""
    try:
        with opened(file, TOKEN_FILE_MAX_BYTES, own=True) as found:
            line = TOKEN_LINE.fullmatch(found.data)
            if line is None:
                raise refused(file, f"it holds no token ({held(found.data)})")
            if loose := loose_mode(found.mode):
                tighten(file, found.fd, loose)
            return line.group(1).decode("ascii")
    except FileNotFoundError:
        return create(file)
    except Unreadable as exc:
        raise refused(file, str(exc)) from None


def tighten(file: Path, fd: int, loose: str) -> None:
    """The token file made private through the descriptor just read, so it is this very file that changes."""
    try:
        os.fchmod(fd, 0o600)
    except OSError as exc:
        raise TokenFileRefused(
            f"The instructor token file {shown(file)} is {loose} and cannot be made private ({describe(exc)}): "
            "`chmod 600` it, or point LAB_INSTRUCTOR_TOKEN_FILE at a new file's path (the box creates it)."
        ) from None
    log.warning("The instructor token file %s was %s: now 0600, its token kept.", shown(file), loose)


def refused(file: Path, why: str) -> TokenFileRefused:
    return TokenFileRefused(
        f"The instructor token file {shown(file)} is not a token file the box wrote ({why}), and the box "
        "overwrites nothing else: point LAB_INSTRUCTOR_TOKEN_FILE at a new file's path (the box creates it), "
        "or move this one away."
    )


def held(data: bytes) -> str:
    lines = len(data.splitlines())
    return f"{len(data)} bytes, {lines} line{'s' * (lines != 1)}"


def create(file: Path) -> str | None:
    """A fresh token in a new file; if another start created it meanwhile, theirs."""
    token = draw()
    try:
        file.parent.mkdir(parents=True, exist_ok=True)
        temporary = private_file(file, token)
    except OSError as exc:
        cannot_keep(file, exc)
        return None
    try:
        os.link(temporary, file)  # never over a file that appeared a moment ago
    except FileExistsError:
        return kept_token(file)
    except OSError as exc:
        cannot_keep(file, exc)
        return None
    finally:
        temporary.unlink(missing_ok=True)
    return token


def cannot_keep(file: Path, exc: OSError) -> None:
    log.warning("Cannot keep the instructor token in %s (%s): it lasts this process only.", shown(file), describe(exc))


def private_file(beside: Path, token: str) -> Path:
    """`token` in a new file readable by this account only, in `beside`'s folder (so a link is atomic)."""
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


def shown(file: Path) -> str:
    """The path as one line can hold it: control characters escaped."""
    return CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", str(file))


def describe(exc: OSError) -> str:
    return exc.strerror or str(exc)
