"""The one reader of the files the lab reads at start-up: whatever is in their place, an answer or one
`Unreadable` with a short reason, at once (a FIFO never blocks it, a device is never read from)."""

import json
import os
import socket
from pathlib import Path

import pytest

from app.datafile import BadNumber, Unreadable, nesting, parse_json, read_bytes, read_json


def test_a_small_json_file_is_read(tmp_path: Path) -> None:
    file = tmp_path / "f.json"
    file.write_text(json.dumps({"limited_seats": 8, "batch_window_s": 0.1, "names": ["가", "b]"]}))
    assert read_json(file, 1024) == {"limited_seats": 8, "batch_window_s": 0.1, "names": ["가", "b]"]}


def test_an_absent_file_is_file_not_found_not_unreadable(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        read_json(tmp_path / "absent.json", 1024)


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (b"", "not JSON"),
        (b"\xff\xfe\x00garbage\x80", "not UTF-8"),
        (bytes(range(256)) * 4, "not UTF-8"),
        (b"{not json", "not JSON"),
        (b"[" * 100 + b"]" * 100, "nested 100 deep"),
        (b'{"a": ' * 9 + b"1" + b"}" * 9, "nested 9 deep"),
    ],
)
def test_what_is_not_small_json_is_unreadable(tmp_path: Path, content: bytes, why: str) -> None:
    file = tmp_path / "f.json"
    file.write_bytes(content)
    with pytest.raises(Unreadable, match=why):
        read_json(file, 1024)


def test_nesting_100000_deep_is_refused_before_the_parser_recurses() -> None:
    """Nesting deep enough to exhaust the parser's recursion must be refused as unreadable, never stop the server."""
    deep = b"[" * 100_000 + b"]" * 100_000
    with pytest.raises(Unreadable, match="nested 100000 deep"):
        parse_json(deep)


def test_brackets_inside_strings_do_not_count_as_nesting() -> None:
    assert nesting('{"a": "[[[[[[[[[[{{{{{{", "b": "\\"[[[["}') == 1
    assert parse_json(b'{"a": "[[[[[[[[[[[[[[[[[[[[[["}') == {"a": "[" * 22}


def test_a_file_over_the_bound_is_refused_without_reading_it(tmp_path: Path) -> None:
    big = tmp_path / "big.json"
    with big.open("wb") as f:
        f.truncate(10 * 2**20)  # 10 MB (sparse)
    with pytest.raises(Unreadable, match="10485760 bytes, over the 65536"):
        read_json(big, 64 * 1024)


@pytest.mark.parametrize("kind", ["directory", "fifo", "dev_zero_link", "socket"])
def test_a_file_that_is_not_regular_is_refused_at_once(tmp_path: Path, kind: str) -> None:
    """A FIFO would block start-up (and SIGTERM with it) and /dev/zero would be read forever: anything but a regular
    file is refused at once."""
    path = tmp_path / "f.json"
    opened: socket.socket | None = None
    if kind == "directory":
        path.mkdir()
    elif kind == "fifo":
        os.mkfifo(path)  # no writer: a blocking open would wait forever
    elif kind == "dev_zero_link":
        path.symlink_to("/dev/zero")
    else:
        opened = socket.socket(socket.AF_UNIX)
        opened.bind(str(path))
    try:
        with pytest.raises(Unreadable, match=r"not a regular file|No such device"):
            read_json(path, 1024)
    finally:
        if opened is not None:
            opened.close()


@pytest.mark.parametrize(
    ("literal", "what"),
    [
        ("1" * 401, "an integer of 401 digits"),
        ("-" + "9" * 21, "an integer of 21 digits"),
        ("NaN", "NaN"),
        ("Infinity", "Infinity"),
        ("-Infinity", "-Infinity"),
        ("1e400", "1e400 (not finite)"),
    ],
)
def test_numbers_the_lab_does_not_take_come_back_as_bad_numbers(literal: str, what: str) -> None:
    """A number the lab cannot hold as a finite float comes back as a bad number its reader can name, never as an
    exception (a 401-digit integer overflows `float()`) that stops the server."""
    value = parse_json(f'{{"x": {literal}, "y": 2}}'.encode())
    assert value["y"] == 2 and value["x"] == BadNumber(what) and str(value["x"]) == what


def test_ordinary_numbers_are_numbers() -> None:
    assert parse_json(b"[0, -0, 8, 2.5, 1e3, 12345678901234567890, -1.5e-3]") == [
        0,
        0,
        8,
        2.5,
        1000.0,
        12345678901234567890,
        -0.0015,
    ]


def test_a_private_file_must_be_this_accounts_alone(tmp_path: Path) -> None:
    file = tmp_path / "token"
    file.write_text("secret")
    file.chmod(0o600)
    assert read_bytes(file, 64, private=True) == b"secret"
    for mode in (0o640, 0o604, 0o620):
        file.chmod(mode)
        with pytest.raises(Unreadable, match=f"group or others \\(mode 0{mode:o}\\)"):
            read_bytes(file, 64, private=True)
    file.chmod(0o600)
    link = tmp_path / "link"
    link.symlink_to(file)
    with pytest.raises(Unreadable, match="symbolic link"):
        read_bytes(link, 64, private=True)
    assert read_bytes(link, 64) == b"secret"  # a link is fine where privacy is not asked for
