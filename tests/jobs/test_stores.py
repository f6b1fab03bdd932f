"""One behavioural suite for every job store: memory, sqlite and the real Redis."""

import asyncio
import time

from app.jobs.models import Expect, Job, JobStatus, WebhookState
from app.jobs.store import Ahead, JobStore, QueueFull
from tests.jobs.conftest import StoreOpener

LEASE_S = 30.0


async def add(store: JobStore, text: str, **fields: object) -> Job:
    job, created = await store.add(Job(text=text, **fields))  # type: ignore[arg-type]
    assert created
    return job


async def test_add_then_get_keeps_every_field(store: JobStore) -> None:
    job = Job(
        text="빵이 맛있어요",
        expires_at=time.time() + 60,
        idempotency_key="key-1",
        request_hash="abc",
        webhook_url="http://127.0.0.1:9/hook",
    )
    stored, created = await store.add(job)
    fetched = await store.get(job.id)
    assert created and stored.seq > 0
    assert fetched == stored
    assert fetched is not None and fetched.text == "빵이 맛있어요" and fetched.status is JobStatus.QUEUED
    assert await store.get("no-such-job") is None


async def test_claims_come_oldest_first_and_mark_running(store: JobStore) -> None:
    jobs = [await add(store, f"리뷰 {i}") for i in range(3)]
    now = time.time()
    claimed = [await store.claim_next("box-a", LEASE_S, now) for _ in range(4)]
    assert [c.id if c else None for c in claimed] == [j.id for j in jobs] + [None]
    first = await store.get(jobs[0].id)
    assert first is not None
    assert (first.status, first.owner, first.attempts) == (JobStatus.RUNNING, "box-a", 1)
    assert first.started_at == now and first.lease_until == now + LEASE_S


async def test_claim_skips_a_retry_still_backing_off_and_a_job_past_its_deadline(store: JobStore) -> None:
    now = time.time()
    backing_off = await add(store, "재시도 대기", run_at=now + 60, attempts=1)
    overdue = await add(store, "너무 오래 기다림", expires_at=now - 1)
    ready = await add(store, "준비됨", expires_at=now + 60)
    claimed = await store.claim_next("box-a", LEASE_S, now)
    assert claimed is not None and claimed.id == ready.id
    assert await store.claim_next("box-a", LEASE_S, now) is None
    assert [j.id for j in await store.overdue(now)] == [overdue.id]
    later = await store.claim_next("box-a", LEASE_S, now + 61)
    assert later is not None and later.id == backing_off.id and later.attempts == 2


async def test_concurrent_claims_from_two_boxes_take_each_job_once(
    store: JobStore, store_opener: StoreOpener, store_url: str
) -> None:
    # Memory lives in one process only: its "second box" is the same store.
    other = store if store_url == "memory://" else await store_opener()
    jobs = [await add(store, f"리뷰 {i}") for i in range(12)]
    now = time.time()
    claims = await asyncio.gather(
        *(box.claim_next(name, LEASE_S, now) for _ in range(8) for box, name in ((store, "a"), (other, "b")))
    )
    taken = [c.id for c in claims if c is not None]
    assert sorted(taken) == sorted(j.id for j in jobs)
    assert (await store.counts())["running"] == 12


async def test_replace_is_conditional_on_status_owner_and_attempt(store: JobStore) -> None:
    await add(store, "리뷰")
    job = await store.claim_next("box-a", LEASE_S, time.time())
    assert job is not None
    job.status, job.finished_at, job.result = (
        JobStatus.DONE,
        time.time(),
        {"topics": [{"id": "x", "label": "y", "score": 1.0}]},
    )
    assert not await store.replace(job, Expect(JobStatus.RUNNING, owner="box-b", attempts=1))
    assert not await store.replace(job, Expect(JobStatus.RUNNING, owner="box-a", attempts=2))
    assert not await store.replace(job, Expect(JobStatus.QUEUED))
    assert await store.replace(job, Expect(JobStatus.RUNNING, owner="box-a", attempts=1))
    stored = await store.get(job.id)
    assert stored is not None and stored.status is JobStatus.DONE and stored.result == job.result


async def test_a_terminal_job_never_changes_status_again(store: JobStore) -> None:
    job = await add(store, "리뷰")
    job.status, job.finished_at = JobStatus.CANCELED, time.time()
    assert await store.replace(job, Expect(JobStatus.QUEUED))
    for status in (JobStatus.QUEUED, JobStatus.RUNNING, JobStatus.DONE):
        job.status = status
        assert not await store.replace(job, Expect(JobStatus.CANCELED))
    stored = await store.get(job.id)
    assert stored is not None and stored.status is JobStatus.CANCELED
    assert await store.claim_next("box-a", LEASE_S, time.time()) is None


async def test_positions_and_counts_follow_the_queue(store: JobStore) -> None:
    jobs = [await add(store, f"리뷰 {i}") for i in range(4)]
    assert [(await store.ahead(j.id) or Ahead(-1, 0)).jobs for j in jobs] == [0, 1, 2, 3]
    await store.claim_next("box-a", LEASE_S, time.time())
    assert [await store.ahead(j.id) is None for j in jobs] == [True, False, False, False]
    assert [(await store.ahead(j.id) or Ahead(-1, 0)).jobs for j in jobs[1:]] == [0, 1, 2]
    assert (await store.counts())["queued"] == 3
    counts = await store.counts()
    assert counts == {"queued": 3, "running": 1, "done": 0, "failed": 0, "expired": 0, "canceled": 0}


async def test_ahead_sums_the_characters_of_the_queued_jobs_in_front(store: JobStore) -> None:
    jobs = [await add(store, text) for text in ("짧음", "조금 더 긴 리뷰", "x" * 300, "끝")]
    aheads = [await store.ahead(j.id) for j in jobs]
    assert aheads == [Ahead(0, 0), Ahead(1, 2), Ahead(2, 2 + 9), Ahead(3, 2 + 9 + 300)]
    await store.claim_next("box-a", LEASE_S, time.time())
    assert await store.ahead(jobs[0].id) is None
    assert [await store.ahead(j.id) for j in jobs[1:]] == [Ahead(0, 0), Ahead(1, 9), Ahead(2, 9 + 300)]


async def test_heartbeat_renews_only_the_owners_leases(store: JobStore, store_opener: StoreOpener) -> None:
    await add(store, "a의 일")
    await add(store, "b의 일")
    now = time.time()
    mine = await store.claim_next("box-a", 1.0, now)
    theirs = await store.claim_next("box-b", 1.0, now)
    assert mine is not None and theirs is not None
    assert await store.heartbeat("box-a", 1.0, now + 0.9) == {mine.id}
    lapsed = await store.lapsed(now + 1.5)
    assert [j.id for j in lapsed] == [theirs.id]
    assert await store.live_workers(now + 1.5) == 1  # only box-a has beaten


async def test_a_lapsed_job_can_be_taken_back_only_while_its_lease_is_over(store: JobStore) -> None:
    await add(store, "리뷰")
    now = time.time()
    job = await store.claim_next("dead-box", 1.0, now)
    assert job is not None
    requeued = Job.from_dict(job.to_dict())
    requeued.status, requeued.owner, requeued.lease_until = JobStatus.QUEUED, None, None
    fence = Expect(JobStatus.RUNNING, owner="dead-box", attempts=1, lapsed_by=now + 0.5)
    assert not await store.replace(requeued, fence)  # the lease still runs until now + 1
    fence = Expect(JobStatus.RUNNING, owner="dead-box", attempts=1, lapsed_by=now + 2)
    assert await store.replace(requeued, fence)
    again = await store.claim_next("new-box", 1.0, now + 2)
    assert again is not None and again.id == job.id and again.attempts == 2 and again.owner == "new-box"


async def test_idempotency_key_returns_the_job_that_holds_it(store: JobStore) -> None:
    first = await add(store, "첫 번째", idempotency_key="same", request_hash="h1")
    second, created = await store.add(Job(text="두 번째", idempotency_key="same", request_hash="h2"))
    assert not created and second.id == first.id and second.request_hash == "h1"
    assert (await store.counts())["queued"] == 1
    held = await store.get_by_idempotency_key("same")
    assert held is not None and held.id == first.id
    assert await store.get_by_idempotency_key("other") is None


async def test_webhooks_due_lists_pending_deliveries_whose_time_came(store: JobStore) -> None:
    now = time.time()
    due = await add(
        store, "a", status=JobStatus.DONE, finished_at=now, webhook_state=WebhookState.PENDING, webhook_next_at=now
    )
    await add(
        store,
        "b",
        status=JobStatus.DONE,
        finished_at=now,
        webhook_state=WebhookState.PENDING,
        webhook_next_at=now + 60,
    )
    await add(store, "c", status=JobStatus.DONE, finished_at=now, webhook_state=WebhookState.DELIVERED)
    assert [j.id for j in await store.webhooks_due(now, 10)] == [due.id]
    due.webhook_state, due.webhook_attempts = WebhookState.DELIVERED, 1
    assert not await store.replace(due, Expect(JobStatus.DONE, webhook_attempts=1))
    assert await store.replace(due, Expect(JobStatus.DONE, webhook_attempts=0))
    assert await store.webhooks_due(now, 10) == []


async def test_forget_finished_drops_old_terminal_jobs_and_their_keys(store: JobStore) -> None:
    now = time.time()
    old = await add(store, "old", status=JobStatus.DONE, finished_at=now - 100, idempotency_key="k")
    pending = await add(store, "hook", status=JobStatus.DONE, finished_at=now - 100, webhook_state=WebhookState.PENDING)
    fresh = await add(store, "fresh", status=JobStatus.DONE, finished_at=now)
    queued = await add(store, "queued")
    assert await store.forget_finished(now - 50) == 1
    assert await store.get(old.id) is None and await store.get_by_idempotency_key("k") is None
    for kept in (pending, fresh, queued):
        assert await store.get(kept.id) is not None
    assert (await store.counts())["done"] == 2


async def test_jobs_survive_reopening_except_in_memory(store_opener: StoreOpener, store_url: str) -> None:
    first = await store_opener()
    job = await add(first, "살아남을까")
    await first.close()
    reopened = await store_opener()
    survived = await reopened.get(job.id)
    if store_url == "memory://":
        assert survived is None  # the lesson: memory dies with its process
    else:
        assert survived == job


async def test_queue_cap_holds_under_a_concurrent_burst_from_two_boxes(
    store: JobStore, store_opener: StoreOpener, store_url: str
) -> None:
    other = store if store_url == "memory://" else await store_opener()

    async def try_add(box: JobStore, i: int) -> bool:
        try:
            await box.add(Job(text=f"폭주 {i}"), max_queued=3)
        except QueueFull as full:
            assert full.queued == 3
            return False
        return True

    accepted = await asyncio.gather(*(try_add(store if i % 2 else other, i) for i in range(10)))
    assert sum(accepted) == 3 and (await store.counts())["queued"] == 3
    done, created = await store.add(Job(text="캐시", status=JobStatus.DONE, finished_at=time.time()), max_queued=3)
    assert created and done.status is JobStatus.DONE  # only queued jobs count against the cap
