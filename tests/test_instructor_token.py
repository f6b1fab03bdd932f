"""The instructor's token is the lesson's: kept in a file only this account may read, the same for every server
that reads it. The box writes only a file it creates: a token file with loose permissions is tightened and kept,
anything else at the path (notes, a knobs.json, a big file, a link, a folder) stops the start in one line, untouched."""

import logging
import os
import socket
import stat
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from asgi_lifespan import LifespanManager

import app.serve
from app.box.placement import Placement
from app.box.supervisor import Supervisor, serve
from app.knobs.instructor import TOKEN, TokenFileRefused, instructor_token, kept_token, lesson_token
from app.main import create_app
from app.settings import Settings
from kit.serverproc import free_port
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


KNOBS = b'{"limited_seats": 6, "batch_max": 4}\n'
NOTES = "수업 메모: ② 먼저, 그다음 ④\nLAB_DOMAIN=lab.school.kr\n".encode()


def refused(tmp_path: Path, name: str) -> Path:
    """What an instructor may have at the token file's path that is not a token file the box wrote."""
    file = tmp_path / "instructor-token"
    if name == "notes":
        file.write_bytes(NOTES)
        file.chmod(0o644)
    elif name == "knobs_json":
        file.write_bytes(KNOBS)
        file.chmod(0o600)
    elif name == "big":
        with file.open("wb") as f:
            f.truncate(2 * 2**30)  # 2 GiB, sparse: nothing written
        file.chmod(0o600)
    elif name == "symlink":
        target = tmp_path / "elsewhere"
        target.write_text("A" * 24 + "\n")  # even a right token behind a link
        target.chmod(0o600)
        file.symlink_to(target)
    elif name == "directory":
        file.mkdir()
        (file / "inside").write_text("kept")
    elif name == "fifo":
        os.mkfifo(file, 0o600)
    else:
        content = {
            "empty": b"",
            "garbage": b"\xff\x00 tok en",
            "too_short": b"abc",
            "blank_line_after": b"A" * 24 + b"\n" * 2,
        }
        file.write_bytes(content.get(name, b"B" * 24 + b"\n" + b"C" * 24 + b"\n"))
        file.chmod(0o600)
    return file


def snapshot(file: Path) -> tuple[int, int, int, bytes | list[str] | None]:
    """What is at `file` (not following a link): kind, mode, size and content, to check nothing changed."""
    st = file.lstat()
    if stat.S_ISLNK(st.st_mode):
        content: bytes | list[str] | None = os.readlink(file).encode()
    elif stat.S_ISDIR(st.st_mode):
        content = sorted(p.name for p in file.iterdir())
    elif stat.S_ISREG(st.st_mode) and st.st_size < 2**20:
        content = file.read_bytes()
    else:
        content = None  # the sparse 2 GiB file and the FIFO: never read
    return stat.S_IFMT(st.st_mode), stat.S_IMODE(st.st_mode), st.st_size, content


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("notes", "it holds no token (66 bytes, 2 lines)"),
        ("knobs_json", "it holds no token (37 bytes, 1 line)"),
        ("big", "2147483648 bytes, over the 1024"),
        ("symlink", "a symbolic link"),
        ("directory", "not a regular file (a directory)"),
        ("fifo", "not a regular file (a FIFO)"),
        ("empty", "it holds no token (0 bytes, 0 lines)"),
        ("garbage", "it holds no token"),
        ("too_short", "it holds no token"),
        ("blank_line_after", "it holds no token"),
        ("two_lines", "it holds no token"),
    ],
)
def test_a_file_that_is_not_a_token_file_stops_the_start_in_one_line_and_is_left_as_it_was(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, name: str, why: str
) -> None:
    """The token file's path is configurable, so whatever sits there may be someone's data: anything that is not a
    token file stops the start in one line and is never overwritten."""
    file = refused(tmp_path, name)
    before, around = snapshot(file), sorted(p.name for p in tmp_path.iterdir())
    with caplog.at_level(logging.WARNING), pytest.raises(TokenFileRefused) as refusal:
        instructor_token(file)
    line = str(refusal.value)
    assert "\n" not in line and str(file) in line and why in line, line
    assert "LAB_INSTRUCTOR_TOKEN_FILE" in line and "move this one away" in line
    assert snapshot(file) == before and sorted(p.name for p in tmp_path.iterdir()) == around  # nothing written
    if name == "symlink":
        assert (tmp_path / "elsewhere").read_text() == "A" * 24 + "\n"
    assert refusals(caplog) == []


@pytest.mark.parametrize("loose", [0o644, 0o640, 0o604, 0o660])
def test_a_right_token_with_loose_permissions_is_tightened_and_kept(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, loose: int
) -> None:
    """The instructor's address carries the token: a right token with loose permissions is tightened in place and
    kept, so the address printed at the previous start keeps working."""
    file = tmp_path / "instructor-token"
    printed = "Rz0-_" + "k" * 19
    file.write_text(printed + "\n")
    file.chmod(loose)
    inode = file.stat().st_ino
    with caplog.at_level(logging.WARNING):
        assert instructor_token(file) == printed
        assert instructor_token(file) == printed  # the next start finds it private: nothing more to say
    assert mode(file) == 0o600 and file.stat().st_ino == inode and file.read_text() == printed + "\n"
    lines = refusals(caplog)
    assert len(lines) == 1 and f"(mode {loose:04o})" in lines[0] and "now 0600, its token kept" in lines[0], lines


@pytest.mark.parametrize("content", [b"A" * 24, b"A" * 24 + b"\n", b"A" * 24 + b"\r\n", b"A" * 200 + b"\n"])
def test_a_private_token_file_is_read_as_it_is(tmp_path: Path, content: bytes) -> None:
    file = tmp_path / "instructor-token"
    file.write_bytes(content)
    file.chmod(0o600)
    assert instructor_token(file) == content.strip().decode() and file.read_bytes() == content


@pytest.mark.skipif(os.geteuid() != 0, reason="making a file another account owns needs root")
def test_a_file_another_account_owns_is_refused_and_left_alone(tmp_path: Path) -> None:
    file = tmp_path / "instructor-token"
    file.write_text("C" * 24)
    file.chmod(0o644)
    os.chown(file, 65534, 65534)
    with pytest.raises(TokenFileRefused, match="owned by uid 65534"):
        instructor_token(file)
    assert file.stat().st_uid == 65534 and mode(file) == 0o644 and file.read_text() == "C" * 24


def test_a_file_that_cannot_be_created_leaves_a_token_for_this_process_only(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "data").symlink_to(tmp_path / "gone")  # a folder that cannot be made: a dangling link is there
    file = tmp_path / "data" / "instructor-token"
    with caplog.at_level(logging.WARNING):
        assert kept_token(file) is None
        first, second = instructor_token(file), instructor_token(file)
    assert first != second and TOKEN.fullmatch(first)
    assert "Cannot keep the instructor token" in refusals(caplog)[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data"]  # no temporary file left behind


def test_a_bare_server_given_someone_elses_file_stops_in_one_line_before_loading_anything(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    knobs = refused(tmp_path, "knobs_json")
    monkeypatch.setattr(app.serve, "get_settings", lambda: Settings(instructor_token_file=knobs))
    monkeypatch.setattr(app.serve, "listening_socket", lambda *_: pytest.fail("the server went on to listen"))
    with pytest.raises(SystemExit) as stopped:
        app.serve.main(["--port", str(free_port())])
    line = str(stopped.value.code)
    assert line.startswith("app.serve: The instructor token file ") and "\n" not in line and str(knobs) in line
    assert knobs.read_bytes() == KNOBS


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


def test_where_the_file_cannot_be_created_the_box_keeps_one_in_its_own_folder(tmp_path: Path) -> None:
    (tmp_path / "data").symlink_to(tmp_path / "gone")
    box = tmp_path / "box"
    box.mkdir(mode=0o700)
    file, token = lesson_token(tmp_path / "data" / "instructor-token", box)
    assert file == box / "instructor-token" and file.read_text().strip() == token and mode(file) == 0o600


def test_the_box_stops_before_anything_starts_when_the_file_is_someone_elses(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    notes = refused(tmp_path, "notes")
    settings = Settings(instructor_token_file=notes, box_cgroups=False)
    monkeypatch.setattr(Supervisor, "run", lambda _self: pytest.fail("the box started a server"))
    with caplog.at_level(logging.INFO, logger="app.box"):
        assert serve("127.0.0.1", free_port(), settings) == 2
    lines = [r.getMessage() for r in caplog.records if r.name == "app.box"]
    assert len(lines) == 1 and str(notes) in lines[0] and "LAB_INSTRUCTOR_TOKEN_FILE" in lines[0], lines
    assert notes.read_bytes() == NOTES


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
