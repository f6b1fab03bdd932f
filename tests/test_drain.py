"""SIGTERM drains (real HTTP, `python -m app.serve`): streams end with a last event, the worker
claims nothing more, and every seated ② request is answered."""

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.jobs.factory import open_store
from app.jobs.models import JobStatus
from kit.live import live_server, slowed
from tests.test_shutdown import exited_cleanly, terminated
from tests.waiting import eventually

# Starts a real server in a subprocess.
pytestmark = pytest.mark.slow

SEATED = 5  # 1 in flight + the 4 default seats
# Long enough for the ticket running at SIGTERM and the five at however slow this host runs the box,
# and well inside the 30 s graceful shutdown. That the worker claims nothing new is read from the store.
MAX_WAIT_S = "20"


async def follow(client: httpx.AsyncClient, job_id: str, events: list[tuple[str, dict[str, Any]]]) -> None:
    """Every event of one ticket's stream, in order, until the server closes it."""
    kind = ""
    async with client.stream("GET", f"/api/queue/jobs/{job_id}/events") as stream:
        async for line in stream.aiter_lines():
            if line.startswith("event: "):
                kind = line.removeprefix("event: ")
            elif line.startswith("data: "):
                events.append((kind, json.loads(line.removeprefix("data: "))))


async def test_sigterm_ends_streams_claims_nothing_new_and_serves_the_seated(tmp_path: Path) -> None:
    store_url = f"sqlite:///{tmp_path / 'jobs.db'}"
    settings = {**slowed(1, warm=False), "LAB_LIMITED_MAX_WAIT_S": MAX_WAIT_S}
    with live_server(LAB_JOB_STORE=store_url, **settings) as server:
        async with httpx.AsyncClient(base_url=server.url, timeout=60) as client:
            tickets = [await client.post("/api/queue/jobs", json={"text": f"드레인 티켓 {i}"}) for i in range(8)]
            ids = [ticket.json()["job_id"] for ticket in tickets]
            events: list[tuple[str, dict[str, Any]]] = []
            streaming = asyncio.create_task(follow(client, ids[-1], events))

            async def followed() -> bool:
                return bool(events)

            await eventually(followed, limit_s=30)
            seated = [
                asyncio.create_task(client.post("/api/limited/predict", json={"text": f"② 드레인 {i}"}))
                for i in range(SEATED)
            ]

            async def all_seated() -> bool:
                return bool((await client.get("/api/stats")).json()["paths"]["limited"]["seats_taken"] == SEATED)

            await eventually(all_seated, limit_s=30)
            sigterm_at = time.time()
            returncode = await terminated(server)
            answers = await asyncio.gather(*seated)
            await streaming
        log = server.log()

    assert [answer.status_code for answer in answers] == [200] * SEATED, [a.text for a in answers]
    kind, last = events[-1]
    assert kind == "shutdown" and last["error"] == "shutting_down", events
    assert exited_cleanly(returncode, log), log
    assert "timeout graceful shutdown exceeded" not in log, log

    store = await open_store(store_url)
    try:
        jobs = [job for job_id in ids if (job := await store.get(job_id)) is not None]
    finally:
        await store.close()
    assert len(jobs) == len(ids)
    assert not [job for job in jobs if job.status is JobStatus.RUNNING]  # finished or handed back
    claimed_after = [job.id for job in jobs if job.started_at is not None and job.started_at > sigterm_at]
    assert len(claimed_after) <= 1, claimed_after  # at most the one already claimed, started on the lane late
