"""burst.py against boxes written here (standard library servers on 127.0.0.1): the student key on every request,
who refused a 429 (the classroom front or the box), the box's death said in Korean, and a hostile box's answers
(too deep, too big, too slow, escape codes) met with one line and never a traceback."""

import itertools
import json
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import ModuleType
from typing import Any
from urllib.parse import urlsplit

import pytest

from kit.live import ROOT
from tests.conftest import students_burst

BURST_PY = ROOT / "static" / "burst.py"
TABLE_ROW = re.compile(r"^\s*(\d+)\s{2}")
KEY_LINE = re.compile(r"학생 키: (?P<key>\S+)  \((?P<why>[^)]*)\)")
STUDENT_KEY = re.compile(r"[A-Za-z0-9_-]{16,64}")
# What a terminal would obey: ESC, the C0 and C1 controls, DEL, bidi overrides and isolates, line separators.
TERMINAL_CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
HOSTILE_LABEL = "⑥ \x1b[31mlifo\x1b]0;pwned\x07\u202e\x9b2J"
GUARD_S = 30.0  # a failure guard for a call that must not hang; never reached when it works

Route = Callable[["BoxHandler"], None]


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]


@dataclass
class FakeBox:
    """Answers each request by its route (`"POST /api/naive/predict"` or a bare path for any method)."""

    routes: dict[str, Route]
    url: str = ""
    seen: list[Seen] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def answer(self, handler: "BoxHandler") -> None:
        path = urlsplit(handler.path).path
        length = int(handler.headers.get("Content-Length") or 0)
        handler.rfile.read(length)
        with self.lock:
            self.seen.append(Seen(handler.command, handler.path, dict(handler.headers.items())))
        route = self.routes.get(f"{handler.command} {path}") or self.routes.get(path)
        try:
            if route is None:
                send_json(handler, 404, {"error": "not_found", "detail": "No such route."})
            else:
                route(handler)
        except OSError:
            pass  # the client hung up (as burst.py does on an answer it will not read on)

    def posts(self) -> list[Seen]:
        with self.lock:
            return [s for s in self.seen if s.method == "POST"]


class BoxHandler(BaseHTTPRequestHandler):
    box: FakeBox

    def do_GET(self) -> None:
        self.box.answer(self)

    def do_POST(self) -> None:
        self.box.answer(self)

    def log_message(self, format: str, *args: Any) -> None:
        pass


class QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that hung up on a trickle or a long answer is the point, not an error


@contextmanager
def fake_box(routes: dict[str, Route]) -> Iterator[FakeBox]:
    box = FakeBox(routes)
    handler = type("Handler", (BoxHandler,), {"box": box})
    server = QuietServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, name="fake-box", daemon=True)
    thread.start()
    box.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield box
    finally:
        server.shutdown()
        server.server_close()
        thread.join(GUARD_S)


def send_json(handler: BaseHTTPRequestHandler, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
    raw = json.dumps(body).encode("utf-8")
    handler.send_response(status)
    for name, value in {"Content-Type": "application/json", **(headers or {})}.items():
        handler.send_header(name, value)
    handler.send_header("Content-Length", str(len(raw)))
    handler.end_headers()
    handler.wfile.write(raw)


def send_raw(handler: BaseHTTPRequestHandler, status: int, raw: bytes, content_type: str = "text/html") -> None:
    handler.send_response(status)
    handler.send_header("Content-Type", content_type)
    handler.send_header("Content-Length", str(len(raw)))
    handler.end_headers()
    handler.wfile.write(raw)


def json_answer(status: int, body: Any, headers: dict[str, str] | None = None) -> Route:
    return lambda h: send_json(h, status, body, headers)


def served(label: str = "친절") -> Route:
    timing = {"Server-Timing": "wait;dur=1, infer;dur=2"}
    return json_answer(200, {"top": {"id": "kind", "label": label, "score": 0.9}}, timing)


def lab_routes(**more: Route) -> dict[str, Route]:
    """What every lab answers: its samples, no paths beyond the handout, a box that never died, healthy."""
    routes: dict[str, Route] = {
        "/api/samples": json_answer(200, [{"id": 1, "text": "빵이 맛있어요!"}]),
        "/api/stats": json_answer(200, {"box": {"deaths": 0, "last_death": None}}),
        "/health": json_answer(200, {"status": "healthy"}),
    }
    return {**routes, **more}


def in_turn(*routes: Route) -> Route:
    """The first request gets the first answer, the next the next; the last answer repeats."""
    count = itertools.count()
    lock = threading.Lock()

    def route(handler: BoxHandler) -> None:
        with lock:
            n = next(count)
        routes[min(n, len(routes) - 1)](handler)

    return route


def trickle(head: bytes, body: bytes, every_s: float = 0.1) -> Route:
    """A server that sends `head` at once and then one byte of `body` every `every_s` (well under any socket
    timeout, so only an overall deadline ends the read)."""

    def route(handler: BoxHandler) -> None:
        handler.wfile.write(head)
        handler.wfile.flush()
        for byte in body:
            time.sleep(every_s)  # the hostile server's pace, not the test's waiting
            handler.wfile.write(bytes([byte]))
            handler.wfile.flush()

    return route


@dataclass
class Stream:
    """A long valid JSON answer written in chunks; `sent` counts what the client took before it hung up."""

    total: int
    sent: int = 0
    done: threading.Event = field(default_factory=threading.Event)

    def route(self, handler: BoxHandler) -> None:
        entry = (
            b'{"name": "x", "number": "6", "label": "6 x", "route": "/api/x", "answer": "direct", "handout": false},'
        )
        chunk = entry * (2**16 // len(entry))
        count = (self.total - 2) // len(chunk)
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(2 + count * len(chunk) + len(b"{}")))
        handler.end_headers()
        try:
            handler.wfile.write(b"[")
            for _ in range(count):
                handler.wfile.write(chunk)
                self.sent += len(chunk)
            handler.wfile.write(b"{}]")
        finally:
            self.done.set()


@pytest.fixture
def burst(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """burst.py as a module (shared by the session), whose paths a test may learn into a copy of its own."""
    module = students_burst()
    monkeypatch.setattr(module, "PATHS", dict(module.PATHS))
    return module


def run_burst(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(BURST_PY), *args], capture_output=True, text=True, timeout=120, check=False
    )


def table_rows(stdout: str) -> list[str]:
    return [line for line in stdout.splitlines() if TABLE_ROW.match(line)]


def guarded(call: Callable[[], Any]) -> Any:
    """`call()` on a thread, failing the test (not hanging it) if it has not returned within GUARD_S."""
    result: list[Any] = []
    errors: list[BaseException] = []

    def target() -> None:
        try:
            result.append(call())
        except BaseException as exc:  # handed to the test's thread
            errors.append(exc)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(GUARD_S)
    assert not thread.is_alive(), "burst.py hung on a trickling answer"
    if errors:
        raise errors[0]
    return result[0] if result else None


# ------------------------------------------------------------------------- the student key


@pytest.mark.slow
def test_every_request_of_a_run_carries_one_student_key_printed_in_its_header() -> None:
    with fake_box(lab_routes(**{"POST /api/limited/predict": served()})) as box:
        first = run_burst(box.url, "3", "limited")
        first_seen = list(box.seen)
        second = run_burst(box.url, "3", "limited")
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    keys = []
    for result in (first, second):
        line = KEY_LINE.search(result.stdout)
        assert line is not None, result.stdout
        keys.append(line["key"])
        assert STUDENT_KEY.fullmatch(line["key"]) and line["why"] == f"다음에도 같은 키로: --student {line['key']}"
    assert keys[0] != keys[1]  # a fresh key per run
    # Every request of the run (samples, paths, stats, the burst, /health) carries the run's key, and only it.
    assert len(first_seen) >= 3 + 2 and len(box.posts()) == 6
    assert {s.headers.get("Cookie") for s in first_seen} == {f"lab_student={keys[0]}"}
    assert {s.headers.get("Cookie") for s in box.seen[len(first_seen) :]} == {f"lab_student={keys[1]}"}


@pytest.mark.slow
@pytest.mark.parametrize("key", ["A" * 16, "z-_9" * 16])
def test_student_keeps_one_key_across_runs(key: str) -> None:
    with fake_box(lab_routes(**{"POST /api/naive/predict": served()})) as box:
        runs = [run_burst(box.url, "2", "naive", "--student", key) for _ in range(2)]
    assert all(r.returncode == 0 for r in runs), [r.stderr for r in runs]
    assert all(f"학생 키: {key}  (--student 로 정한 키)" in r.stdout for r in runs)
    assert {s.headers.get("Cookie") for s in box.seen} == {f"lab_student={key}"}


@pytest.mark.parametrize("key", ["short", "a" * 15, "a" * 65, "가" * 16, "abcdefgh ijklmnop", "x" * 16 + "\x1b[2J"])
def test_a_student_key_of_another_shape_is_refused_with_a_korean_usage_error(key: str) -> None:
    result = run_burst("http://127.0.0.1:1", "3", "naive", "--student", key)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "--student 의 키는 영문자·숫자·_·- 로만 된 16-64자여야 합니다" in result.stderr
    assert "usage: burst.py" in result.stderr and not TERMINAL_CONTROL.search(result.stderr.replace("\n", ""))


# ------------------------------------------------------------------------- who refused

FRONT_429 = json_answer(429, {"error": "front_limit", "detail": "Too many at once."}, {"Retry-After": "1"})
FRONT_429_AS_REASON = json_answer(429, {"error": "too_often", "reason": "front_limit", "detail": "."})
BOX_429 = json_answer(429, {"error": "box_full", "detail": "The box is full."}, {"Retry-After": "2"})
QUEUE_429 = json_answer(429, {"error": "job_queue_full", "detail": "Too many tickets."}, {"Retry-After": "3"})


@pytest.mark.slow
def test_the_summary_counts_the_fronts_429_apart_from_the_boxs_in_the_handouts_words(tmp_path: Path) -> None:
    out = tmp_path / "rows.json"
    answers = in_turn(FRONT_429, FRONT_429, FRONT_429_AS_REASON, BOX_429, BOX_429, served())
    with fake_box(lab_routes(**{"POST /api/limited/predict": answers})) as box:
        result = run_burst(box.url, "6", "limited", "--json", str(out))
    assert result.returncode == 0, result.stderr
    assert "② limited: 200×1 429×5 | 429 = 상자가 감당 못 함×2 + 한 사람이 너무 자주×3 | 처리 1/6" in result.stdout
    rows = table_rows(result.stdout)
    assert sum("한 사람이 너무 자주" in row for row in rows) == 3
    assert sum("상자가 감당 못 함" in row for row in rows) == 2
    assert "같은 번호, 다른 이유" in result.stdout  # the handout's distinction, once the front has refused
    (burst,) = json.loads(out.read_text(encoding="utf-8"))["bursts"]
    assert burst["summary"]["refused"] == {"box": 2, "front": 3}
    assert sorted(str(r["refused_by"]) for r in burst["rows"]) == ["None", "box", "box", "front", "front", "front"]


def test_a_refusal_names_its_refuser_only_from_its_code(burst: ModuleType) -> None:
    assert burst.refused_by(429, {"error": "front_limit"}) == "front"
    assert burst.refused_by(429, {"error": "too_often", "reason": "front_limit"}) == "front"
    assert burst.refused_by(429, {"error": "box_full"}) == burst.refused_by(429, {"error": "job_queue_full"}) == "box"
    assert burst.refused_by(429, {}) is None and burst.refused_by(503, {"error": "box_full"}) is None
    summary = burst.summarize("limited", [burst.Row(index=1, path="limited", text="a", status=429)])
    assert summary.refused == {"unknown": 1} and "429 = 까닭 모름×1" in burst.summary_line(summary)


def test_retry_honours_the_fronts_retry_after_and_keeps_the_seat_the_box_held(
    burst: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The box holds a seat (429 box_full + Seat-Hold); the return meets the front's limit, which never reached the
    box: the token is still this student's, so the next return presents it again. The front's 429 without a
    Retry-After comes back after a second, as one with `Retry-After: 1` would."""
    no_wait = json_answer(429, {"error": "front_limit", "detail": "."})
    seated = json_answer(200, {"top": {"label": "친절"}}, {"Seat-Hold-Result": "seated"})
    held = json_answer(429, {"error": "box_full", "detail": "."}, {"Retry-After": "2", "Seat-Hold": "tok.abc"})
    slept: list[float] = []
    monkeypatch.setattr(burst.time, "sleep", slept.append)
    with fake_box(lab_routes(**{"POST /api/limited/predict": in_turn(held, FRONT_429, no_wait, seated)})) as box:
        row = burst.Row(index=1, path="limited", text="리뷰")
        burst.fire_until_served(box.url, "limited", row, 10.0, 4, lambda: 0.0)
    assert [s.headers.get("Seat-Hold") for s in box.posts()] == [None, "tok.abc", "tok.abc", "tok.abc"]
    assert slept == [2.0, 1.0, 1.0]
    assert [(a.status, a.refused_by) for a in row.attempts] == [
        (429, "box"),
        (429, "front"),
        (429, "front"),
        (200, None),
    ]
    assert row.status == 200 and "한 사람이 너무 자주" in burst.attempts_line(row)


# ------------------------------------------------------------------------- the box's death


@dataclass
class DyingBox:
    """A box behind the front that dies at its first ① request: every request of the burst gets nginx's 502,
    /health answers 502 `down_polls` times more, then 200; /api/stats then counts one more death."""

    down_polls: int = 2
    deaths: int = 0
    health_polls: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def predict(self, handler: BoxHandler) -> None:
        with self.lock:
            self.deaths = 1
        send_raw(handler, 502, b"<html><center><h1>502 Bad Gateway</h1></center></html>")

    def health(self, handler: BoxHandler) -> None:
        with self.lock:
            self.health_polls += 1
            up = self.health_polls > self.down_polls
        if up:
            send_json(handler, 200, {"status": "healthy"})
        else:
            send_raw(handler, 502, b"<html>502 Bad Gateway</html>")

    def stats(self, handler: BoxHandler) -> None:
        last = {"cause": "memory_cap", "detail": "the kernel's OOM killer", "at": 1.0} if self.deaths else None
        send_json(handler, 200, {"box": {"incarnation": 1 + self.deaths, "deaths": self.deaths, "last_death": last}})

    def routes(self) -> dict[str, Route]:
        return lab_routes(**{"POST /api/naive/predict": self.predict, "/health": self.health, "/api/stats": self.stats})


@pytest.mark.slow
def test_a_burst_that_killed_the_box_says_so_why_and_when_it_answered_again(tmp_path: Path) -> None:
    out = tmp_path / "rows.json"
    dying = DyingBox()
    with fake_box(dying.routes()) as box:
        result = run_burst(box.url, "4", "naive", "--json", str(out))
    assert result.returncode == 0, result.stderr
    death = re.search(
        r"^상자가 죽었습니다 \(메모리 상한\) → (\d+\.\d)초 뒤 다시 살아남 .*$", result.stdout, re.MULTILINE
    )
    assert death is not None, result.stdout
    assert "끊긴 요청 4개" in death[0] and "실습 시작 뒤 1번 죽음" in death[0]
    rows = table_rows(result.stdout)
    assert len(rows) == 4 and all("502" in row and "상자가 죽어 끊김" in row for row in rows), rows
    report = json.loads(out.read_text(encoding="utf-8"))["bursts"][0]
    assert report["box_death"]["times"] == 1 and report["box_death"]["cut"] == 4
    assert report["box_death"]["cause"] == "memory_cap" and report["box_death"]["back_after_s"] > 0
    assert dying.health_polls == dying.down_polls + 1  # asked until it answered, and no more
    assert all(r["cut_by_death"] for r in report["rows"])


def test_502s_without_a_death_are_not_called_one(burst: ModuleType) -> None:
    """A 502 the box's stats do not count as a death (a hiccup of the front) is left a 502."""
    with fake_box(lab_routes(**{"POST /api/naive/predict": lambda h: send_raw(h, 502, b"bad gateway")})) as box:
        before = burst.box_life(box.url)
        rows = burst.fire_burst(box.url, "naive", ["a", "b"], timeout_s=10)
        assert burst.look_for_death(box.url, before, rows) is None
    assert before == burst.BoxLife(0, None) and not any(r.cut_by_death for r in rows)


def test_a_box_that_does_not_answer_again_is_said_to_have_died_within_a_bound(burst: ModuleType) -> None:
    dying = DyingBox(down_polls=10**6)
    with fake_box(dying.routes()) as box:
        before = burst.box_life(box.url)
        rows = burst.fire_burst(box.url, "naive", ["a", "b", "c"], timeout_s=10)
        death = guarded(lambda: burst.look_for_death(box.url, before, rows, limit_s=0.5))
    assert death is not None and (death.times, death.cut) == (0, 3)
    line = burst.death_line(death)
    assert line.startswith("상자가 죽은 것 같습니다: 요청 3개가 끊겼고") and "/health 가 답하지 않았습니다" in line
    assert all(r.cut_by_death for r in rows) and dying.health_polls >= 1


def test_death_causes_read_as_the_page_says_them(burst: ModuleType) -> None:
    assert burst.cause_text("memory_cap") == "메모리 상한"
    assert burst.cause_text("signal 9") == "시그널 9" and burst.cause_text("exit 1") == "종료 코드 1"
    twice = burst.Death(times=2, cause="signal 9", back_after_s=None, total=5, cut=0)
    assert burst.death_line(twice) == "상자가 2번 죽었습니다 (시그널 9) → 다시 살아남 · 실습 시작 뒤 5번 죽음"


# ------------------------------------------------------------------------- a hostile box


def test_a_paths_answer_nested_a_hundred_thousand_deep_gets_one_line(
    burst: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    deep = b"[" * 100_000 + b"]" * 100_000
    with fake_box(lab_routes(**{"/api/paths": lambda h: send_raw(h, 200, deep, "application/json")})) as box:
        burst.learn_paths(box.url)
    assert list(burst.PATHS) == ["naive", "limited", "batched", "tickets"]
    err = capsys.readouterr().err
    why = "JSON 이 32단보다 깊게 겹쳐 있어 읽지 않았습니다"
    assert err == f"{box.url}/api/paths 의 경로 목록을 읽지 않았습니다: {why}. 교재의 네 경로만 씁니다.\n"


def test_escape_codes_in_a_paths_answer_never_reach_the_terminal(
    burst: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    listed: list[dict[str, object]] = [
        {"name": "lifo", "number": "⑥", "label": HOSTILE_LABEL, "route": "/api/lifo/predict", "answer": "direct"},
        {"name": "evil\x1b[2J", "number": "⑦", "label": "⑦ evil", "route": "/api/evil/predict", "answer": "direct"},
        {"name": "away", "number": "⑧", "label": "⑧ away", "route": "//attacker.example/x", "answer": "direct"},
    ]
    listed = [{**item, "handout": False} for item in listed]
    with fake_box(lab_routes(**{"/api/paths": json_answer(200, listed)})) as box:
        burst.learn_paths(box.url)
    assert burst.PATHS["lifo"].label == "⑥ lifo"  # the colours, the title and the bidi override are gone
    assert set(burst.PATHS) == {"naive", "limited", "batched", "tickets", "lifo"}  # no odd name, no route off the box
    assert capsys.readouterr().err == f"{box.url}/api/paths 의 경로 2개는 읽을 수 없어 건너뜁니다.\n"


def test_an_answer_over_a_mebibyte_is_not_read_on(burst: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    """64 MiB of valid paths: read whole before, now one line after the first MiB, and the box is hung up on."""
    stream = Stream(total=64 * 2**20)
    with fake_box(lab_routes(**{"/api/paths": stream.route})) as box:
        guarded(lambda: burst.learn_paths(box.url))
        assert stream.done.wait(GUARD_S)
    assert list(burst.PATHS) == ["naive", "limited", "batched", "tickets"]
    assert "의 경로 목록을 읽지 않았습니다: 답이 1 MiB 를 넘어 더 읽지 않았습니다." in capsys.readouterr().err
    assert stream.sent < stream.total // 2  # what the kernel's buffers took, never the answer


@pytest.mark.parametrize(
    "route",
    [
        trickle(b"HTTP/1.0 200 OK\r\n", b"Content-Type: application/json\r\nContent-Length: 2\r\n\r\n[]"),
        trickle(b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\nContent-Length: 600\r\n\r\n", b" " * 600),
    ],
    ids=["head", "body"],
)
def test_a_trickling_answer_is_cut_at_the_requests_deadline(
    burst: ModuleType, capsys: pytest.CaptureFixture[str], route: Route
) -> None:
    """One byte every 0.1 s never trips a socket timeout; the request's own deadline (1 s here) ends it."""
    with fake_box(lab_routes(**{"/api/paths": route})) as box:
        with pytest.raises(burst.TooSlow, match="답이 1초 안에 다 오지 않아 끊었습니다"):
            guarded(lambda: burst.request_json("GET", box.url + "/api/paths", timeout_s=1.0))
        guarded(lambda: burst.learn_paths(box.url, timeout_s=1.0))
    assert "경로 목록을 읽지 않았습니다: 답이 1초 안에 다 오지 않아 끊었습니다" in capsys.readouterr().err


@pytest.mark.slow
def test_a_run_ends_at_its_own_deadline_with_one_line(tmp_path: Path) -> None:
    slow = trickle(b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\nContent-Length: 900\r\n\r\n", b" " * 900)
    with fake_box(lab_routes(**{"POST /api/limited/predict": slow})) as box:
        result = run_burst(box.url, "2", "limited", "--timeout", "600", "--run-timeout", "2")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "실행 전체 제한 시간(2초, --run-timeout)이 지나 멈췄습니다." in result.stderr
    rows = table_rows(result.stdout)
    assert len(rows) == 2 and all("읽지 않음" in row for row in rows), result.stdout
    assert "상자가 죽" not in result.stdout  # a hang is not a death


@pytest.mark.slow
def test_a_hostile_box_gets_one_line_each_and_a_clean_table_never_a_traceback(tmp_path: Path) -> None:
    """Samples nested too deep, a path whose label writes escape codes, answers whose fields are of the wrong kind
    or nest too deep: the run still fires, and nothing a terminal would obey is printed."""
    listed = [
        {"name": "lifo", "number": "⑥", "label": HOSTILE_LABEL, "route": "/api/lifo/predict", "answer": "direct"},
        {"name": "deep", "number": "⑦", "label": "⑦ deep", "route": "/api/deep/predict", "answer": "direct"},
    ]
    wrong_kinds = {"error": ["x"], "top": {"label": {"nested": "\x1b[2J"}}}
    routes = lab_routes(
        **{
            "/api/samples": lambda h: send_raw(h, 200, b"[" * 50_000, "application/json"),
            "/api/paths": json_answer(200, [{**item, "handout": False} for item in listed]),
            "POST /api/lifo/predict": in_turn(served("\x1b[2J친절\u202e"), json_answer(200, wrong_kinds)),
            "POST /api/deep/predict": lambda h: send_raw(h, 200, b'{"a":' * 40 + b"1" + b"}" * 40, "application/json"),
        }
    )
    out = tmp_path / "rows.json"
    with fake_box(routes) as box:
        lifo = run_burst(box.url, "2", "6", "--json", "-")
        deep = run_burst(box.url, "2", "deep", "--json", str(out))
    for result in (lifo, deep):
        assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
        assert not TERMINAL_CONTROL.search(result.stdout.replace("\n", "") + result.stderr.replace("\n", ""))
        assert "/api/samples 의 예시 리뷰를 읽지 않았습니다: JSON 이 32단보다 깊게 겹쳐 있어" in result.stderr
    assert "⑥ lifo — 2개 동시 발사" in lifo.stderr  # with --json -, the table goes to stderr
    assert sorted(r["top_topic"] for r in json.loads(lifo.stdout)["bursts"][0]["rows"] if r["top_topic"]) == ["친절"]
    rows = json.loads(out.read_text(encoding="utf-8"))["bursts"][0]["rows"]
    assert all(r["odd_answer"] and r["error"].startswith("JSON 이 32단보다 깊게") for r in rows)
    assert "⑦ deep: odd×2" in deep.stdout


def test_a_tickets_fields_of_the_wrong_kind_are_left_out_and_its_id_stays_one_segment(
    burst: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    queued = {"job_id": "../../x?y", "status": "queued", "eta_seconds": "soon"}
    done = {"status": "done", "waited_ms": "x", "inference_ms": [1], "result": {"topics": [{"label": "\x1b[2J친절"}]}}
    monkeypatch.setattr(burst.time, "sleep", lambda _: None)
    routes = lab_routes(
        **{
            "POST /api/queue/jobs": json_answer(202, queued),
            "GET /api/queue/jobs/..%2F..%2Fx%3Fy": json_answer(200, done),
        }
    )
    with fake_box(routes) as box:
        row = burst.Row(index=1, path="tickets", text="리뷰")
        burst.fire_one(box.url, "tickets", row, 10.0)
    assert (row.status, row.job_status, row.top_topic, row.eta_s, row.actual_s) == (202, "done", "친절", None, None)
    assert [s.path for s in box.seen] == ["/api/queue/jobs", "/api/queue/jobs/..%2F..%2Fx%3Fy"]


def test_what_is_printed_or_written_holds_nothing_a_terminal_obeys(burst: ModuleType) -> None:
    hostile = "a\x1b[2Jb\x1b]0;title\x07c\x1bPdcs\x1b\\d\u202ee\u2066f\x9b31mg\x00h\x7fi\u2028j\tk"
    assert burst.clean(hostile) == "abcdefghijk"
    assert burst.clean("가나다라마바사", 4) == "가나다…"
    text = burst.json_text({"label": hostile, "ok": "한글"})
    assert not TERMINAL_CONTROL.search(text.replace("\n", "")) and "한글" in text
    assert json.loads(text)["label"] == hostile  # escaped, not lost


def test_too_deep_counts_brackets_outside_strings_only(burst: ModuleType) -> None:
    assert not burst.too_deep('{"a": "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["}')
    assert not burst.too_deep('{"a": "\\"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["}', limit=2)
    assert burst.too_deep("[" * 33 + "]" * 33) and not burst.too_deep("[" * 32 + "]" * 32)
    assert burst.number_field(10**400) is None and burst.number_field(True) is None
    assert burst.number_field(float("nan")) is None and burst.number_field(2) == 2.0
    assert burst.header_int("²") is None and burst.header_int("9" * 7) is None and burst.header_int("3") == 3
