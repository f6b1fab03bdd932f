"""Server-sent events through a real uvicorn: the stream really streams, then closes after the end."""

import json
from typing import Any

import httpx
import pytest

from kit.live import live_server, slowed

pytestmark = pytest.mark.slow


def test_events_arrive_one_by_one_and_end_with_the_terminal_state() -> None:
    with live_server(**slowed(0.3)) as server, httpx.Client(base_url=server.url) as client:
        ids = [client.post("/api/queue/jobs", json={"text": f"스트림 리뷰 {i}"}).json()["job_id"] for i in range(3)]
        events: list[dict[str, Any]] = []
        with client.stream("GET", f"/api/queue/jobs/{ids[-1]}/events", timeout=30) as stream:
            assert stream.headers["content-type"].startswith("text/event-stream")
            for line in stream.iter_lines():
                if line.startswith("data: "):
                    events.append(json.loads(line.removeprefix("data: ")))
        final = client.get(f"/api/queue/jobs/{ids[-1]}").json()
    statuses = [event["status"] for event in events]
    assert statuses[0] == "queued" and statuses[-1] == "done"
    positions = [event["position"] for event in events if event["status"] == "queued"]
    assert positions == sorted(positions, reverse=True) and len(set(positions)) == len(positions)
    assert "running" in statuses
    assert events[-1] == final
