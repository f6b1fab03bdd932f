"""The lesson's record outlives a death of the box: the real supervisor (`python -m app.box`) restarts its server after
a SIGKILL (what the kernel sends at the memory cap) on the same state folder, and the next incarnation has every
request the dead one had written down, the requests it held as cut by the death, the death as one mark within a
second of it, the instructor's knob turn, the students' numbers and nicknames, and goes on counting."""

import contextlib
import signal
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest

from tests.box.test_box_knobs_live import printed_token
from tests.box.test_box_live import Box, boxed

pytestmark = pytest.mark.slow

NAMED, HELD, LATER = "a" * 22, "b" * 22, "c" * 22
GUARD_S = 120.0  # failure guards, never delays


def server_of(box: Box) -> psutil.Process:
    children = psutil.Process(box.process.pid).children()
    assert len(children) == 1, children
    return children[0]


def lesson_file(server: psutil.Process) -> Path:
    """Where the supervisor told its server to keep the record (its own state folder, unless LAB_LESSON_FILE)."""
    return Path(server.environ()["LAB_LESSON_FILE"])


def open_in_file(file: Path, student: str) -> int:
    with sqlite3.connect(f"file:{file}?mode=ro", uri=True) as db:
        row = db.execute("SELECT COUNT(*) FROM entries WHERE student = ? AND status IS NULL", (student,)).fetchone()
    return int(row[0])


def until(check: Any, what: str) -> None:
    deadline = time.monotonic() + GUARD_S
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def test_a_death_keeps_the_lesson_marks_it_and_cuts_what_the_dead_server_held() -> None:
    with boxed(LAB_BOX_SECONDS_PER_REVIEW="2", LAB_WARMUP="0", LAB_MEMORY_CAP_BYTES="0") as box:
        teacher = {"Authorization": f"Bearer {printed_token(box)}"}
        with httpx.Client(base_url=box.url, timeout=60, cookies={"lab_student": NAMED}) as named:
            assert named.put("/api/class/me", json={"name": "민지"}).status_code == 200
            assert named.post("/api/limited/predict", json={"text": "먼저 온 리뷰"}).status_code == 200
        assert httpx.put(f"{box.url}/api/knobs/limited_seats", json={"value": 6}, headers=teacher).status_code == 200

        server = server_of(box)
        file = lesson_file(server)
        assert file.parent.name.startswith("lab-box-")  # the box's own state folder

        def held(i: int) -> None:  # cut by the death: the connection is lost, never answered
            client = httpx.Client(base_url=box.url, timeout=60, cookies={"lab_student": HELD})
            with client, contextlib.suppress(httpx.TransportError):
                client.post("/api/limited/predict", json={"text": f"기다리던 리뷰 {i}"})

        threads = [threading.Thread(target=held, args=(i,)) for i in range(3)]
        for thread in threads:
            thread.start()
        until(lambda: open_in_file(file, HELD) == 3, "the three arrivals reach the file while they wait")
        server.send_signal(signal.SIGKILL)
        killed_at = time.time()
        for thread in threads:
            thread.join(GUARD_S)
        until(lambda: healthy(box) and box.stats()["incarnation"] == 2, "the box comes back")

        with httpx.Client(base_url=box.url, timeout=60, cookies={"lab_student": LATER}) as later:
            assert later.post("/api/batched/predict", json={"text": "살아난 뒤의 리뷰"}).status_code == 200
        until(lambda: len(requests(box, teacher)["requests"]) == 5, "the new request is recorded")
        lesson = requests(box, teacher)
        assert lesson_file(server_of(box)) == file  # the same state folder, the same file

    records = lesson["requests"]
    assert [(r["name"], r["outcome"], r["incarnation"]) for r in records] == [
        ("민지", "served", 1),
        ("학생 2", "cut", 1),
        ("학생 2", "cut", 1),
        ("학생 2", "cut", 1),
        ("학생 3", "served", 2),
    ]
    marks = [(m["kind"], m.get("setting"), m.get("incarnation")) for m in lesson["marks"]]
    assert marks == [("start", None, 1), ("knob", "limited_seats", None), ("death", None, None), ("start", None, 2)]
    death = lesson["marks"][2]
    assert death["cause"] == f"signal {signal.SIGKILL.value}" and killed_at <= death["at"] + 0.01
    assert death["at"] - killed_at < 1.0  # the death's one mark across the lanes, within a second of it
    assert all(r["answered"] == death["at"] for r in records if r["outcome"] == "cut")


def limited_in_flight(box: Box) -> int:
    found: int = httpx.get(f"{box.url}/api/stats", timeout=30).json()["paths"]["limited"]["in_flight"]
    return found


def healthy(box: Box) -> bool:
    try:
        return httpx.get(f"{box.url}/health", timeout=2).status_code == 200
    except httpx.TransportError:
        return False


def requests(box: Box, headers: dict[str, str]) -> dict[str, Any]:
    body: dict[str, Any] = httpx.get(f"{box.url}/api/class/requests", headers=headers, timeout=30).json()
    return body


def test_what_a_student_saw_in_the_last_moment_before_a_death_is_kept() -> None:
    """An answer sent and an arrival made a few milliseconds before a SIGKILL, both before the feed's next half-second
    write: the next incarnation has the answer as the student saw it and the arrival as cut, not a cut and nothing."""
    with boxed(LAB_BOX_SECONDS_PER_REVIEW="2", LAB_WARMUP="0", LAB_MEMORY_CAP_BYTES="0") as box:
        teacher = {"Authorization": f"Bearer {printed_token(box)}"}
        server = server_of(box)
        with httpx.Client(base_url=box.url, timeout=60, cookies={"lab_student": NAMED}) as named:
            seen = named.post("/api/limited/predict", json={"text": "죽기 직전에 받은 답"})
        assert seen.status_code == 200

        def cut() -> None:
            client = httpx.Client(base_url=box.url, timeout=60, cookies={"lab_student": HELD})
            with client, contextlib.suppress(httpx.TransportError):
                client.post("/api/limited/predict", json={"text": "죽기 직전에 온 리뷰"})

        arriving = threading.Thread(target=cut)
        arriving.start()
        until(lambda: limited_in_flight(box) == 1, "the second review is on the lane")
        server.send_signal(signal.SIGKILL)
        arriving.join(GUARD_S)
        until(lambda: healthy(box) and box.stats()["incarnation"] == 2, "the box comes back")
        records = requests(box, teacher)["requests"]

    wait, infer = (float(part.split("dur=")[1]) for part in seen.headers["server-timing"].split(","))
    assert [(r["student"], r["status"], r["outcome"], r["wait_ms"], r["infer_ms"]) for r in records] == [
        (NAMED, 200, "served", round(wait, 1), round(infer, 1)),
        (HELD, None, "cut", None, None),
    ]
