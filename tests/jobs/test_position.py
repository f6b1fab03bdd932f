"""A ticket's position in its 202 is counted in the same atomic step that adds it.

Read before the insert, a burst of 12 saw `position: 0` (or a few repeated values) in most
answers. The model is gated, so all 12 are accepted while the first one is still running.
"""

import asyncio
from contextlib import AsyncExitStack

import httpx
import pytest

from app.jobs.models import Job, JobStatus
from tests.conftest import LabClientFactory
from tests.fakes import GatedScorer
from tests.jobs.conftest import StoreOpener

BURST = 12
FAST = {"job_poll_s": 0.02, "job_lease_s": 5.0, "queue_max_jobs": 50}


async def post(client: httpx.AsyncClient, i: int) -> int:
    response = await client.post("/api/queue/jobs", json={"text": f"동시 리뷰 {i}번"})
    assert response.status_code == 202, response.text
    position: int = response.json()["position"]
    return position


async def test_a_burst_of_12_on_an_idle_box_gets_positions_0_to_11(
    lab_client: LabClientFactory, store_url: str
) -> None:
    scorer = GatedScorer()
    async with lab_client(scorer, job_store=store_url, **FAST) as client:
        positions = await asyncio.gather(*(post(client, i) for i in range(BURST)))
        scorer.open()
    assert sorted(positions) == list(range(BURST)), positions


@pytest.mark.parametrize("store_url", ["sqlite", "redis"], indirect=True)
async def test_a_burst_of_12_across_two_boxes_sharing_a_store_gets_positions_0_to_11(
    lab_client: LabClientFactory, store_url: str
) -> None:
    scorers = [GatedScorer(), GatedScorer()]
    async with AsyncExitStack() as boxes:
        clients = [await boxes.enter_async_context(lab_client(s, job_store=store_url, **FAST)) for s in scorers]
        positions = await asyncio.gather(*(post(clients[i % 2], i) for i in range(BURST)))
        for scorer in scorers:
            scorer.open()
    assert sorted(positions) == list(range(BURST)), positions


async def test_store_counts_queued_and_running_jobs_ahead_in_the_add(store_opener: StoreOpener, store_url: str) -> None:
    box_a = await store_opener()
    box_b = box_a if store_url == "memory://" else await store_opener()  # a memory store is one process's
    added = await asyncio.gather(*(box_a.add(Job(text=f"리뷰 {i}")) for i in range(3)))
    claimed = await box_b.claim_next("box-b", 5.0, added[0][0].enqueued_at + 1)
    later, _ = await box_b.add(Job(text="나중 리뷰"))
    done, _ = await box_a.add(Job(text="캐시 리뷰", status=JobStatus.DONE))
    stored = await box_a.get(later.id)
    assert sorted(job.ahead_at_add or 0 for job, _ in added) == [0, 1, 2]
    assert claimed is not None and later.ahead_at_add == 3  # one running + two queued
    assert stored is not None and stored.ahead_at_add == 3
    assert done.ahead_at_add is None
