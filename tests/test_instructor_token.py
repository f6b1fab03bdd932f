"""The instructor's token is the lesson's: kept in a file only this account may read, the same for every server
that reads it; a file that is not a private regular file holding a token is refused in one line and replaced."""

import logging
import os
import socket
import stat
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from asgi_lifespan import LifespanManager

from app.box.placement import Placement
from app.box.supervisor import Supervisor, lesson_token
from app.knobs.instructor import TOKEN, instructor_token, kept_token
from app.main import create_app
from app.settings import Settings
from tests.fakes import GatedScorer


def mode(file: Path) -> int:
    return stat.S_IMODE(file.lstat().st_mode)


def refusals(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "instructor token" in r.getMessage()]


def test_without_a_file_each_server_draws_its_own() -> None:
    first, second = instructor_token(None), instructor_token(None)
    assert first != second and TOKEN.fullmatch(first) and TOKEN.fullmatch(second)


def test_a_new_file_is_drawn_once_private_and_read_back_by_every_later_start(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    file = tmp_path / "data" / "instructor-token"  # its folder is made too
    with caplog.at_level(logging.WARNING):
        token = instructor_token(file)
        assert [instructor_token(file) for _ in range(3)] == [token] * 3
    assert file.read_text().strip() == token and mode(file) == 0o600
    assert refusals(caplog) == [] and [p.name for p in file.parent.iterdir()] == ["instructor-token"]


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("group_readable", "readable or writable by group or others (mode 0640)"),
        ("world_readable", "readable or writable by group or others (mode 0644)"),
        ("symlink", "a symbolic link"),
        ("fifo", "not a regular file (a FIFO)"),
        ("empty", "it holds no token"),
        ("garbage", "it holds no token"),
        ("too_short", "it holds no token"),
        ("too_big", "2000 bytes, over the 1024"),
    ],
)
def test_a_file_that_is_not_a_private_token_is_refused_in_one_line_and_replaced(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, name: str, why: str
) -> None:
    file = tmp_path / "instructor-token"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.write_text("A" * 24)
    elsewhere.chmod(0o600)
    if name == "symlink":
        file.symlink_to(elsewhere)
    elif name == "fifo":
        os.mkfifo(file, 0o600)
    else:
        content = {"empty": b"", "garbage": b"\xff\x00 tok en", "too_short": b"abc", "too_big": b"A" * 2000}
        file.write_bytes(content.get(name, b"B" * 24))
        file.chmod({"group_readable": 0o640, "world_readable": 0o644}.get(name, 0o600))
    with caplog.at_level(logging.WARNING):
        token = instructor_token(file)
    lines = refusals(caplog)
    assert len(lines) == 1 and why in lines[0] and "a fresh token is in its place" in lines[0], lines
    assert file.is_file() and not file.is_symlink() and mode(file) == 0o600
    assert file.read_text().strip() == token and token not in ("A" * 24, "B" * 24)
    assert elsewhere.read_text() == "A" * 24  # what a link pointed at is left alone
    assert instructor_token(file) == token  # and it is the lesson's from now on


@pytest.mark.skipif(os.geteuid() != 0, reason="making a file another account owns needs root")
def test_a_file_another_account_owns_is_refused(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    file = tmp_path / "instructor-token"
    file.write_text("C" * 24)
    file.chmod(0o600)
    os.chown(file, 65534, 65534)
    with caplog.at_level(logging.WARNING):
        token = instructor_token(file)
    assert token != "C" * 24 and file.stat().st_uid == os.geteuid()
    assert "owned by uid 65534" in refusals(caplog)[0]


def test_a_file_that_cannot_be_replaced_leaves_a_token_for_this_process_only(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    folder = tmp_path / "instructor-token"
    folder.mkdir()
    with caplog.at_level(logging.WARNING):
        assert kept_token(folder) is None
        first, second = instructor_token(folder), instructor_token(folder)
    assert first != second and TOKEN.fullmatch(first)
    assert "not a regular file (a directory)" in refusals(caplog)[0] and "cannot replace it" in refusals(caplog)[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["instructor-token"]  # no temporary file left behind


@pytest.fixture
def sock() -> Iterator[socket.socket]:
    with socket.socket() as unbound:
        yield unbound


def test_the_supervisor_hands_its_file_to_every_incarnation(tmp_path: Path, sock: socket.socket) -> None:
    file, token = lesson_token(tmp_path / "instructor-token", tmp_path / "box")
    assert file == tmp_path / "instructor-token" and file.read_text().strip() == token
    placement = Placement([0], "affinity", "off", None)
    supervisor = Supervisor(Settings(), "127.0.0.1", 0, placement, sock, None, token=token, token_file=file)
    env = supervisor.child_env(supervisor.initial_state())
    assert env["LAB_INSTRUCTOR_TOKEN_FILE"] == str(file)


def test_where_the_file_cannot_be_written_the_box_keeps_one_in_its_own_folder(tmp_path: Path) -> None:
    (tmp_path / "taken").mkdir()
    box = tmp_path / "box"
    box.mkdir(mode=0o700)
    file, token = lesson_token(tmp_path / "taken", box)
    assert file == box / "instructor-token" and file.read_text().strip() == token and mode(file) == 0o600


async def test_a_server_restarted_with_the_file_answers_the_same_token(tmp_path: Path) -> None:
    """In-process, the restart the box makes after a death: the second lab takes the first one's token."""
    file = tmp_path / "instructor-token"
    seats: list[int] = []
    for value in (6, 7):
        settings = Settings(warmup=False, job_store="memory://", knobs_file=None, instructor_token_file=file)
        app = create_app(settings, GatedScorer(gated=False))
        async with LifespanManager(app) as manager:
            transport = httpx.ASGITransport(app=manager.app)
            async with httpx.AsyncClient(transport=transport, base_url="http://lab") as client:
                headers = {"Authorization": f"Bearer {file.read_text().strip()}"}
                turned = await client.put("/api/knobs/limited_seats", json={"value": value}, headers=headers)
                page = await client.get("/instructor", params={"token": file.read_text().strip()})
        assert turned.status_code == 200 and page.status_code == 200
        seats.append(next(int(k["value"]) for k in turned.json()["knobs"] if k["setting"] == "limited_seats"))
    assert seats == [6, 7]
