"""The handout's own lines, run verbatim with a real curl and a real burst.py against a live box.

Students read these lines beside the page (the handout sets `B` to the box's API base, which
ends in /api) and copy them into a terminal. Each test runs one line exactly as printed, through
bash with only `B` set (and the ticket id filled in), and asserts what the handout says comes back.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.paths.registry import PATHS
from kit.live import ROOT, LiveServer, live_server

# Starts a real uvicorn server in a subprocess and runs curl and burst.py as further processes.
pytestmark = pytest.mark.slow

# Copied character for character from the handout ("직접 호출"); only `B` differs per box.
LIMITED_LINE = (
    "curl -si $B/limited/predict -H 'content-type: application/json' "
    """-d '{"text":"가격이 좀 비싸긴 한데 직원분이 친절했어요"}' | grep -iE 'HTTP/|server-timing|x-cache|topics'"""
)
TICKET_POST_LINE = (
    "curl -s $B/queue/jobs -H 'content-type: application/json' "
    """-d '{"text":"30분 줄 섰는데 단팥빵 품절이라고 해서 화났어요"}'"""
)
TICKET_GET_LINE = "curl -s $B/queue/jobs/a1b2c3d4"  # the handout's example id, replaced by the real one
BURST_LINE = "just burst $B 12"
SUMMARY = re.compile(r"^(?P<label>[①②③④] \w+): (?P<counts>(?:\S+×\d+ ?)+) \|")


@pytest.fixture(scope="module")
def server() -> Iterator[LiveServer]:
    if shutil.which("curl") is None:
        if os.environ.get("CI"):
            pytest.fail("curl is missing in CI: the handout's lines need it")
        pytest.skip("curl is not installed")
    with live_server() as running:
        yield running


def run_line(server: LiveServer, line: str, timeout_s: float = 120) -> subprocess.CompletedProcess[str]:
    """One handout line in bash, with B set as the handout sets it and the venv's `just` on PATH."""
    env = {**os.environ, "B": f"{server.url}/api", "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    return subprocess.run(
        ["bash", "-c", line], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout_s, check=False
    )


def test_limited_line_shows_status_server_timing_cache_and_topics(server: LiveServer) -> None:
    result = run_line(server, LIMITED_LINE)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert re.fullmatch(r"HTTP/1\.1 200 OK\s*", lines[0]), lines
    headers = {name.lower(): value.strip() for name, _, value in (line.partition(":") for line in lines[1:-1])}
    assert set(headers) == {"server-timing", "x-cache"}, lines
    assert re.fullmatch(r"wait;dur=\d+(\.\d+)?, infer;dur=\d+(\.\d+)?", headers["server-timing"])
    assert headers["x-cache"] == "miss"
    body = json.loads(lines[-1])  # the JSON body is one line, and it holds "topics"
    assert len(body["topics"]) == 24 and all(topic["label"] for topic in body["topics"])


def ticket_until_done(server: LiveServer, job_id: str, limit_s: float = 60) -> dict[str, Any]:
    """The handout's GET line, repeated as a student would, until the ticket is done (or the limit)."""
    deadline = time.monotonic() + limit_s
    while True:
        result = run_line(server, TICKET_GET_LINE.replace("a1b2c3d4", job_id))
        assert result.returncode == 0, result.stderr
        job: dict[str, Any] = json.loads(result.stdout)
        if job["status"] not in ("queued", "running") or time.monotonic() > deadline:
            return job
        time.sleep(0.1)  # polling another process: the box runs the job in its own time


def test_ticket_lines_give_a_202_body_then_a_done_result_with_topics(server: LiveServer) -> None:
    posted = run_line(server, TICKET_POST_LINE)
    assert posted.returncode == 0, posted.stderr
    ticket = json.loads(posted.stdout)
    # → {"job_id":"a1b2c3d4","status":"queued","position":0,"eta_seconds":1.2}
    assert {"job_id", "status", "position", "eta_seconds"} <= set(ticket), ticket
    assert re.fullmatch(r"[0-9a-f]{8,}", ticket["job_id"]) and ticket["status"] == "queued"
    assert ticket["position"] == 0  # nothing else on this box: first in line
    assert isinstance(ticket["eta_seconds"], int | float) and ticket["eta_seconds"] > 0

    done = ticket_until_done(server, ticket["job_id"])
    # → {"status":"done","result":{"topics":[…]},"waited_ms":…,"inference_ms":…}
    assert done["status"] == "done", done
    assert isinstance(done["waited_ms"], int | float) and done["waited_ms"] >= 0
    assert isinstance(done["inference_ms"], int | float) and done["inference_ms"] > 0
    # HANDOUT SHAPE: `result` is {"topics": [...]}, never a bare list; do not xfail it.
    assert isinstance(done["result"], dict) and len(done["result"]["topics"]) == 24, done["result"]


def test_just_burst_with_the_api_base_fires_twelve_at_each_path(server: LiveServer) -> None:
    result = run_line(server, BURST_LINE, timeout_s=300)
    assert result.returncode == 0, result.stderr
    found = {
        m.group("label"): {status: int(n) for status, n in (item.split("×") for item in m.group("counts").split())}
        for line in result.stdout.splitlines()
        if (m := SUMMARY.match(line))
    }
    assert list(found) == [p.label for p in PATHS if p.handout], result.stdout  # test_registry pins the labels
    assert all(sum(counts.values()) == 12 for counts in found.values()), found
    assert all(set(counts) <= {"200", "202", "429", "503"} for counts in found.values()), found  # no 404, no error
    assert found["① naive"] == {"200": 12} and found["④ tickets"] == {"202": 12}
