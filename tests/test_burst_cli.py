"""burst.py, the students' standard-library burst, run as they run it against a real server."""

import json
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from urllib.request import urlopen

import pytest

from app.paths.registry import PATHS
from kit.live import ROOT, LiveServer, live_server, slowed
from kit.serverproc import free_port
from tests.conftest import students_burst

BURST_PY = ROOT / "static" / "burst.py"
SECONDS_PER_REVIEW = 0.3
# CPU burning pads each review in proportion to its own cost, calibrated on the median sample:
# a shorter review costs less than the target, never nothing; half of it is a floor for the average.
FLOOR_S = 0.5 * SECONDS_PER_REVIEW
PYENV_39 = sorted(Path.home().glob(".pyenv/versions/3.9*/bin/python3.9"))
TABLE_ROW = re.compile(r"^\s*(\d+)\s{2}")
SUMMARY = re.compile(r"^(?P<label>[①-⑳] \w+): (?P<counts>(?:\S+×\d+ ?)+) \|")


@pytest.fixture(scope="module")
def server() -> Iterator[LiveServer]:
    with live_server(**slowed(SECONDS_PER_REVIEW)) as running:
        yield running


@pytest.fixture(scope="module")
def burst() -> ModuleType:
    """burst.py imported as a module: the lead's benchmark reuses its functions the same way."""
    return students_burst()


def run_burst(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(BURST_PY), *args], capture_output=True, text=True, timeout=120, check=False
    )


def table_indexes(stdout: str) -> list[int]:
    return [int(m.group(1)) for line in stdout.splitlines() if (m := TABLE_ROW.match(line))]


def summaries(stdout: str) -> dict[str, dict[str, int]]:
    """`② limited: 200×5 429×7 | …` → {"② limited": {"200": 5, "429": 7}}."""
    found: dict[str, dict[str, int]] = {}
    for line in stdout.splitlines():
        if m := SUMMARY.match(line):
            pairs = (item.split("×") for item in m.group("counts").split())
            found[m.group("label")] = {status: int(n) for status, n in pairs}
    return found


@pytest.mark.slow
def test_limited_burst_prints_one_row_per_request_and_counts_add_up(server: LiveServer, tmp_path: Path) -> None:
    out = tmp_path / "rows.json"
    result = run_burst(server.url, "12", "limited", "--json", str(out))
    assert result.returncode == 0, result.stderr
    assert table_indexes(result.stdout) == list(range(1, 13))
    # Twelve threads, twelve connections, released together: all arrive during the first inference,
    # so exactly 1 in flight + 4 seats are admitted and seven are refused.
    assert summaries(result.stdout) == {"② limited": {"200": 5, "429": 7}}
    (burst,) = json.loads(out.read_text(encoding="utf-8"))["bursts"]
    assert burst["summary"]["counts"] == {"200": 5, "429": 7} and burst["summary"]["served"] == 5
    rows = burst["rows"]
    assert [r["index"] for r in rows] == list(range(1, 13))
    assert all(r["retry_after_s"] >= 1 and r["error"] == "box_full" for r in rows if r["status"] == 429)
    served = [r for r in rows if r["status"] == 200]
    # The server's own inference time, as Server-Timing said it: real, inside the round trip, and on average
    # near the slowed review's cost (one short review may cost well under half of it on a fast host).
    assert all(0 < r["infer_ms"] <= r["round_trip_ms"] and r["top_topic"] for r in served), served
    assert sum(r["infer_ms"] for r in served) / len(served) >= FLOOR_S * 1000, served
    assert len({r["text"] for r in rows}) == 12  # distinct reviews, so the cache answers none of them


@pytest.mark.slow
def test_tickets_are_followed_to_done_with_promised_and_actual_eta(server: LiveServer, tmp_path: Path) -> None:
    out = tmp_path / "tickets.json"
    result = run_burst(server.url, "4", "4", "--json", str(out))
    assert result.returncode == 0, result.stderr
    assert table_indexes(result.stdout) == [1, 2, 3, 4]
    assert summaries(result.stdout) == {"④ tickets": {"202": 4}}
    assert "약속ETA" in result.stdout and "ETA 대비" in result.stdout
    rows = json.loads(out.read_text(encoding="utf-8"))["bursts"][0]["rows"]
    assert all(r["job_status"] == "done" and r["eta_s"] > 0 and r["actual_s"] > 0 for r in rows)
    # One lane: the last of four tickets waited for the three before it.
    assert max(r["actual_s"] for r in rows) >= 0.9 * 4 * FLOOR_S


@pytest.mark.slow
def test_default_fires_each_path_in_turn(server: LiveServer) -> None:
    result = run_burst(server.url, "3")
    assert result.returncode == 0, result.stderr
    found = summaries(result.stdout)
    assert list(found) == [p.label for p in PATHS if p.handout]
    assert all(sum(counts.values()) == 3 for counts in found.values())
    assert table_indexes(result.stdout) == [1, 2, 3] * 4


@pytest.mark.slow
@pytest.mark.parametrize("suffix", ["/api", "/api/", "/"])
def test_the_api_base_or_the_root_with_a_slash_reach_the_same_box(server: LiveServer, suffix: str) -> None:
    """The handout's `just burst $B 12` passes the API base: joined blindly, it makes /api/api/… and 48 × 404."""
    no_seat_held(server)  # the earlier bursts' refused never came back: their held seats must run out first
    result = run_burst(server.url + suffix, "2", "limited")
    assert result.returncode == 0, result.stderr
    assert summaries(result.stdout) == {"② limited": {"200": 2}}
    assert f"→ {server.url}/api/limited/predict" in result.stdout


@pytest.mark.slow
def test_a_wrong_path_says_which_url_answered_404_and_what_to_pass_instead(server: LiveServer) -> None:
    result = run_burst(server.url + "/lab", "12", "limited")
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert f"{server.url}/lab/api/samples" in result.stderr and "404" in result.stderr
    assert f"{server.url}/api" in result.stderr.replace(f"{server.url}/lab", "")  # the suggestion, not the echo
    assert table_indexes(result.stdout) == []  # nothing fired: no wall of 404 rows


def test_an_unreachable_box_says_which_url_was_tried_and_fires_nothing() -> None:
    nobody = f"http://127.0.0.1:{free_port()}"
    result = run_burst(nobody + "/api", "3", "naive")
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert f"{nobody}/api/samples 에 연결하지 못했습니다" in result.stderr and f"{nobody}/api" in result.stderr
    assert table_indexes(result.stdout) == []


def test_connection_errors_during_a_burst_are_counted_not_raised(burst: ModuleType) -> None:
    rows = burst.fire_burst(f"http://127.0.0.1:{free_port()}/api", "naive", ["a", "b", "c"], timeout_s=5)
    assert [r.status for r in rows] == [None, None, None] and all(r.error for r in rows)
    assert burst.summarize("naive", rows).counts == {"error": 3}


def test_box_root_accepts_the_root_or_the_api_base(burst: ModuleType) -> None:
    for typed in [
        "http://box:8000",
        "http://box:8000/",
        "http://box:8000/api",
        "http://box:8000/api/",
        " http://box:8000// ",
    ]:
        assert burst.box_root(typed) == "http://box:8000", typed
    assert burst.box_root("https://lab.example/review/api") == "https://lab.example/review"
    assert burst.box_root("http://box:8000/apis") == "http://box:8000/apis"  # only a whole /api segment


def is_python39(executable: str) -> bool:
    """A real 3.9 interpreter (a pyenv shim without that version selected answers 127)."""
    check = "import sys; sys.exit(sys.version_info[:2] != (3, 9))"
    if not executable:
        return False
    return subprocess.run([executable, "-c", check], capture_output=True, check=False).returncode == 0


@pytest.mark.slow
def test_runs_on_the_oldest_python_a_students_mac_may_have(server: LiveServer) -> None:
    """burst.py promises Python 3.9+ with the standard library only: run it there for real."""
    python39 = next(filter(is_python39, [*map(str, PYENV_39), shutil.which("python3.9") or ""]), None)
    if python39 is None:
        pytest.skip("no Python 3.9 on this machine (pyenv install 3.9 to run this test)")
    result = subprocess.run(
        [python39, "-I", str(BURST_PY), server.url + "/api", "2", "tickets"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert summaries(result.stdout) == {"④ tickets": {"202": 2}}


def test_bad_arguments_are_refused_with_usage() -> None:
    result = run_burst("http://127.0.0.1:1", "500", "limited")
    assert result.returncode == 2 and "n must be between 1 and 200" in result.stderr


@pytest.mark.slow
def test_a_path_the_box_does_not_serve_is_refused_with_the_boxs_own_list(server: LiveServer) -> None:
    result = run_burst(server.url, "12", "fastest")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    served = f"{', '.join(p.name for p in PATHS)}, 1-{len(PATHS)} or all"
    assert f"unknown path 'fastest': this box serves {served}" in result.stderr
    assert table_indexes(result.stdout) == []


@pytest.mark.slow
def test_a_path_beyond_the_handout_is_learned_from_the_box_and_fired_by_its_number(server: LiveServer) -> None:
    result = run_burst(server.url, "3", "5")
    assert result.returncode == 0, result.stderr
    assert f"⑤ adaptive — 3개 동시 발사 → {server.url}/api/adaptive/predict" in result.stdout
    (counts,) = summaries(result.stdout).values()
    assert list(summaries(result.stdout)) == ["⑤ adaptive"] and sum(counts.values()) == 3


def test_korean_columns_stay_aligned(burst: ModuleType) -> None:
    assert burst.width("1위 주제") == 8 and burst.width("abc") == 3
    assert burst.fit("가나다라", 5) == "가나 " and burst.fit("42", 4, right=True) == "  42"
    rows = [
        burst.Row(index=1, path="limited", text="a", status=200, wait_ms=5.0, infer_ms=900.0, round_trip_ms=950.0),
        burst.Row(index=2, path="limited", text="b", status=429, retry_after_s=3, round_trip_ms=12.0),
        burst.Row(index=10, path="limited", text="c", status=None, error=None, round_trip_ms=1.0),
    ]
    lines = burst.table("limited", rows).splitlines()
    assert len({burst.width(line) for line in lines[1:]}) == 1, lines


def test_server_timing_and_quantiles_match_the_page(burst: ModuleType) -> None:
    assert burst.parse_server_timing("wait;dur=12.5, infer;dur=980.1") == {"wait": 12.5, "infer": 980.1}
    assert burst.parse_server_timing(None) == {}
    assert burst.quantile([3.0, 1.0, 2.0, 4.0], 0.5) == 2.0
    assert burst.quantile([float(v) for v in range(1, 21)], 0.95) == 19.0
    assert burst.quantile([], 0.5) is None


def test_a_done_ticket_names_its_top_topic_in_the_handout_shape_and_the_old_one(burst: ModuleType) -> None:
    topics = [{"id": "kind", "label": "친절", "score": 0.9}, {"id": "price", "label": "가격", "score": 0.1}]
    for result in ({"topics": topics}, topics):  # {"topics": [...]} as the handout shows; a bare list from older boxes
        row = burst.Row(index=1, path="tickets", text="a")
        burst._finish_ticket(row, {"status": "done", "result": result, "waited_ms": 5.0, "inference_ms": 20.0}, None)
        assert (row.job_status, row.top_topic, row.actual_s) == ("done", "친절", 0.025)


@pytest.mark.slow
def test_retry_serves_all_twelve_on_limited_and_prints_every_attempt(server: LiveServer, tmp_path: Path) -> None:
    out = tmp_path / "rows.json"
    no_seat_held(server)  # an earlier burst's refused never came back: their holds run out first
    result = run_burst(server.url, "12", "limited", "--retry", "--json", str(out))
    assert result.returncode == 0, result.stderr
    (burst,) = json.loads(out.read_text(encoding="utf-8"))["bursts"]
    rows, summary = burst["rows"], burst["summary"]
    # Everyone is served in the end, or says why not (a try left over and what the last one got).
    assert all(r["status"] == 200 or (len(r["attempts"]) == 4 and r["error"]) for r in rows), rows
    refused_first = [r for r in rows if r["attempts"][0]["status"] == 429]
    assert len(refused_first) == 7 and summary["returners"] == 7
    # A hold for each seat the five admitted free; the other two are told only when a seat is free.
    assert sorted(str(r["attempts"][0]["hold"]) for r in refused_first) == ["None"] * 2 + ["held"] * 5
    for row in refused_first:
        first, *later = row["attempts"]
        assert first["retry_after_s"] >= 1
        # Each return is sent after the Retry-After it was given (never early).
        assert later[0]["at_ms"] >= first["retry_after_s"] * 1000
    # Every try is on its row: the line under a returner's row lists them all.
    assert result.stdout.count("    ↳ ") == 7
    assert "마지막 학생 처리까지" in result.stdout and "첫 재방문에 자리" in result.stdout
    assert summary["attempts_max"] >= 2 and summary["last_served_s"] > 0


def no_seat_held(server: LiveServer, limit_s: float = 60.0) -> None:
    """Until no seat on ② is held (a failure guard: holds end at most a grace window after their Retry-After)."""
    deadline = time.monotonic() + limit_s
    while json.loads(urlopen(server.url + "/api/stats", timeout=10).read())["paths"]["limited"]["held"]:
        assert time.monotonic() < deadline, "seats still held"
        time.sleep(0.05)


def test_a_refused_client_comes_back_with_its_hold_after_retry_after(
    burst: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No server: the first answer is ②'s 429 with a hold, the second a 200; the token must go back."""
    sent: list[dict[str, str] | None] = []
    slept: list[float] = []

    def answer(status: int, headers: dict[str, str], body: dict[str, object]) -> object:
        message = burst.Message()
        for name, value in headers.items():
            message[name] = value
        return burst.Answer(status, message, body)

    replies = [
        answer(429, {"Retry-After": "2", "Seat-Hold": "abc.def"}, {"error": "box_full"}),
        answer(200, {"Seat-Hold-Result": "seated", "Server-Timing": "wait;dur=5, infer;dur=300"}, {}),
    ]

    def fake_request(method: str, url: str, payload: object, timeout_s: float, headers: object = None) -> object:
        sent.append(headers)  # type: ignore[arg-type]
        return replies[len(sent) - 1]

    monkeypatch.setattr(burst, "request_json", fake_request)
    monkeypatch.setattr(burst.time, "sleep", slept.append)
    row = burst.Row(index=1, path="limited", text="리뷰")
    burst.fire_until_served("http://box", "limited", row, 5.0, 3, lambda: 0.25)
    assert sent == [None, {"Seat-Hold": "abc.def"}]
    assert slept == [2.25]
    assert [(a.status, a.hold) for a in row.attempts] == [(429, "held"), (200, "seated")]
    assert row.status == 200 and row.infer_ms == 300
    summary = burst.summarize("limited", [row], retry=True)
    assert (summary.returners, summary.seated_first_return, summary.attempts_max) == (1, 1, 2)
    assert "보관석 착석" in burst.attempts_line(row)


def test_retries_are_bounded(burst: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []

    def always_full(method: str, url: str, payload: object, timeout_s: float, headers: object = None) -> object:
        calls.append(url)
        message = burst.Message()
        message["Retry-After"] = "1"
        return burst.Answer(429, message, {"error": "box_full"})

    monkeypatch.setattr(burst, "request_json", always_full)
    monkeypatch.setattr(burst.time, "sleep", lambda _: None)
    row = burst.Row(index=1, path="limited", text="리뷰")
    burst.fire_until_served("http://box", "limited", row, 5.0, 2, lambda: 0.0)
    assert len(calls) == 3 and len(row.attempts) == 3
    assert row.status == 429 and row.error == "box_full"
