"""Webhooks go out concurrently, bounded per target: a receiver that never answers holds back
only its own deliveries.

Deliveries went one at a time with a 5 s timeout: ten jobs aimed at a silent receiver
delayed another client's webhook by 47 s.
"""

import asyncio
import time

from app.jobs.in_memory import MemoryJobStore
from app.jobs.models import WebhookState
from app.jobs.webhooks import WebhookDispatcher, WebhookSigner
from kit.webhook_receiver import done_job, silent_receiver, webhook_receiver
from tests.conftest import LabClientFactory
from tests.fakes import GatedScorer
from tests.jobs.test_webhooks import HOOKS, SECRET, webhook_settles
from tests.waiting import eventually

SLOW_JOBS = 10


async def test_a_silent_receiver_does_not_delay_another_clients_webhook(lab_client: LabClientFactory) -> None:
    # The timeout is far beyond the test: only concurrency can get the fast webhook out.
    hooks = {**HOOKS, "webhook_timeout_s": 120.0}
    async with (
        silent_receiver() as slow,
        webhook_receiver() as fast,
        lab_client(GatedScorer(gated=False), **hooks) as client,
    ):
        for i in range(SLOW_JOBS):
            response = await client.post("/api/queue/jobs", json={"text": f"느린 {i}", "webhook_url": slow.url})
            assert response.status_code == 202
        await eventually(lambda: _at_least(slow.received, 1))
        response = await client.post("/api/queue/jobs", json={"text": "빠른", "webhook_url": fast.url})
        (delivery,) = await fast.wait_for(1)
        final = await webhook_settles(client, response.json()["job_id"], "delivered")
        still_held = slow.open_now
    assert final["webhook_state"] == "delivered" and delivery.headers["webhook-id"] == f"msg_{final['job_id']}"
    assert still_held >= 1  # the slow ones were still hanging while the fast one went out


async def _at_least(value: int, wanted: int) -> bool:
    return value >= wanted


async def _at_most(value: int, wanted: int) -> bool:
    return value <= wanted


async def _delivered(store: MemoryJobStore, job_id: str) -> bool:
    job = await store.get(job_id)
    return job is not None and job.webhook_state is WebhookState.DELIVERED


async def test_deliveries_are_bounded_in_all_and_per_target() -> None:
    store = MemoryJobStore()
    async with silent_receiver() as slow, webhook_receiver() as fast:
        for i in range(SLOW_JOBS):
            await store.add(done_job(slow.url, i))
        fast_job, _ = await store.add(done_job(fast.url, SLOW_JOBS))
        dispatcher = WebhookDispatcher(
            store,
            WebhookSigner(SECRET),
            model="m",
            allow_private=True,
            max_attempts=3,
            backoff_s=0.01,
            timeout_s=120,
            max_concurrent=3,
            per_target=2,
        )
        try:
            started = await dispatcher.deliver_due()
            await fast.wait_for(1)
            await eventually(lambda: _delivered(store, fast_job.id))
            await eventually(lambda: _at_least(slow.received, 2))
            # The fast delivery's slot is freed by its task's done-callback, a step after the store says delivered.
            await eventually(lambda: _at_most(dispatcher.in_flight, 2))
            again = await dispatcher.deliver_due()  # a slot is free, but the silent target is still at its limit
            in_flight, most_open = dispatcher.in_flight, slow.most_open
        finally:
            await dispatcher.close()
        waiting = [j for j in await store.webhooks_due(time.time(), 100) if j.webhook_url == slow.url]
        stored_fast = await store.get(fast_job.id)
    assert started == 3 and again == 0
    assert in_flight == 2 and most_open == 2 and slow.received == 2
    assert len(waiting) == SLOW_JOBS - 2  # not claimed: they wait for a slot, unattempted
    assert stored_fast is not None and stored_fast.webhook_state is WebhookState.DELIVERED


async def test_close_stops_deliveries_in_flight_and_leaves_them_claimed() -> None:
    store = MemoryJobStore()
    async with silent_receiver() as slow:
        job, _ = await store.add(done_job(slow.url, 0))
        dispatcher = WebhookDispatcher(
            store, WebhookSigner(SECRET), model="m", allow_private=True, max_attempts=3, backoff_s=0.01, timeout_s=120
        )
        assert await dispatcher.deliver_due() == 1
        await eventually(lambda: _at_least(slow.received, 1))
        await asyncio.wait_for(dispatcher.close(), 10)
    stored = await store.get(job.id)
    assert dispatcher.in_flight == 0
    assert stored is not None and stored.webhook_state is WebhookState.PENDING and stored.webhook_attempts == 1
    assert (stored.webhook_next_at or 0) > time.time()  # due again once its claim lapses
