"""The files the lab reads at start-up (the knobs file, the call-shape cache, the instructor's token), read as
untrusted data: a wrong file is a reason to log one line and carry on, never a reason not to start.

Every one of them is small, so it is read with bounds: opened without blocking (a FIFO in its place
would hold start-up forever) and refused unless it is a regular file, at most `max_bytes` read, and
JSON refused before parsing when it nests deeper than `max_depth` (Python's parser recurses). Numbers
are bounded too: an integer of hundreds of digits, NaN, Infinity or a float that overflows come back as
`BadNumber`, so the caller drops that one entry, saying why, instead of crashing on it later.
"""

import json
import math
import os
import re
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MAX_INT_DIGITS = 20  # far more than any count, byte size or setting the lab keeps
MAX_DEPTH = 8
_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_NOT_BRACKETS = re.compile(r"[^\[\]{}]+")


class Unreadable(ValueError):
    """The file is there but is not one the lab will read; the message says why, in a few words."""


@dataclass(frozen=True, slots=True)
class BadNumber:
    """A number in the file the lab does not take (what it was, for the log line)."""

    what: str

    def __str__(self) -> str:
        return self.what


@dataclass(frozen=True, slots=True)
class Opened:
    """A file the lab has open and checked: its descriptor (to act on that very file), mode and bytes."""

    fd: int
    mode: int
    data: bytes


@contextmanager
def opened(path: Path, max_bytes: int, *, own: bool = False) -> Iterator[Opened]:
    """The file open, checked and read, or Unreadable: not a regular file or over `max_bytes`, or (`own`) a
    link or another account's. Closed on leaving. FileNotFoundError passes through: absent is not wrong."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC | (os.O_NOFOLLOW if own else 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise Unreadable("a symbolic link" if own and os.path.islink(path) else exc.strerror or str(exc)) from None
    try:
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise Unreadable(f"not a regular file ({kind(st.st_mode)})")
            if own and st.st_uid != os.geteuid():
                raise Unreadable(f"owned by uid {st.st_uid}, not by this account")
            if st.st_size > max_bytes:
                raise Unreadable(f"{st.st_size} bytes, over the {max_bytes} this file may have")
            data = os.read(fd, max_bytes + 1)  # a file that grew since fstat is still bounded
        except OSError as exc:
            raise Unreadable(exc.strerror or str(exc)) from None
        if len(data) > max_bytes:
            raise Unreadable(f"over the {max_bytes} bytes this file may have")
        yield Opened(fd, st.st_mode, data)
    finally:
        os.close(fd)


def read_bytes(path: Path, max_bytes: int, *, private: bool = False) -> bytes:
    """The file's bytes, or Unreadable: as `opened` says, and (`private`) readable by anyone but this account."""
    with opened(path, max_bytes, own=private) as file:
        if private and (loose := loose_mode(file.mode)):
            raise Unreadable(loose)
        return file.data


def loose_mode(mode: int) -> str:
    """Why a file's mode is not private ('' when it is): group or others may read or write it."""
    return f"readable or writable by group or others (mode {stat.S_IMODE(mode):04o})" if mode & 0o077 else ""


def read_json(path: Path, max_bytes: int, max_depth: int = MAX_DEPTH) -> Any:
    """The file's JSON value, bounded as the module says; Unreadable (a one-line reason) if it is not one."""
    return parse_json(read_bytes(path, max_bytes), max_depth)


def parse_json(data: bytes, max_depth: int = MAX_DEPTH) -> Any:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Unreadable(f"not UTF-8 (byte {exc.start})") from None
    if (depth := nesting(text)) > max_depth:
        raise Unreadable(f"nested {depth} deep, over {max_depth}")
    try:
        return json.loads(text, parse_int=bounded_int, parse_float=finite_float, parse_constant=BadNumber)
    except ValueError as exc:  # JSONDecodeError; its message is one line
        raise Unreadable(f"not JSON ({exc})") from None


def nesting(text: str) -> int:
    """How deep the brackets outside strings go (an overestimate for text that is not JSON: it is refused anyway)."""
    brackets = _NOT_BRACKETS.sub("", _STRINGS.sub("", text))
    depth = deepest = 0
    for bracket in brackets:
        depth = depth + 1 if bracket in "[{" else max(depth - 1, 0)
        deepest = max(deepest, depth)
    return deepest


def bounded_int(literal: str) -> int | BadNumber:
    digits = len(literal.lstrip("-"))
    return int(literal) if digits <= MAX_INT_DIGITS else BadNumber(f"an integer of {digits} digits")


def finite_float(literal: str) -> float | BadNumber:
    value = float(literal)
    return value if math.isfinite(value) else BadNumber(f"{literal[:20]} (not finite)")


def is_number(value: object) -> bool:
    """A JSON number the lab takes: an int or a finite float, never a bool (`true` is an int in Python)."""
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a device")):
        if test(mode):
            return name
    return "a socket" if stat.S_ISSOCK(mode) else "a block device" if stat.S_ISBLK(mode) else "not a file"
