"""Followers wake on change: one poll of the store per process instead of one per follower.

Each event-stream follower read its job every `job_poll_s`: 100 followers × 20 tickets
cost 76 % CPU and raised POST latency from 7 to 190 ms.
"""

import asyncio
import itertools
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from app.jobs.models import Expect, Job, JobStatus
from app.jobs.sqlite import SqliteJobStore
from app.jobs.watch import StoreWatcher
from app.paths.ticket_config import FollowConfig
from app.paths.ticket_follow import TicketFollower
from app.paths.ticket_state import Signals
from app.paths.tickets import Ticket
from tests.fakes import GatedScorer
from tests.jobs.conftest import StoreOpener
from tests.jobs.test_follow_many import EventTap, events_of, lab_app, query
from tests.jobs.test_lifecycle import submit
from tests.waiting import eventually

FOLLOWERS = 10
TICKETS = 20


async def test_version_grows_with_every_job_change_but_not_with_lease_renewals(
    store_opener: StoreOpener, store_url: str
) -> None:
    store = await store_opener()
    other = store if store_url == "memory://" else await store_opener()  # another box, where one can exist
    seen = [await store.version()]
    await other.add(Job(text="리뷰"))
    seen.append(await store.version())
    claimed = await other.claim_next("box-b", 5.0, time.time())
    seen.append(await store.version())
    await store.heartbeat("box-b", 5.0, time.time())  # renewing leases is no change to a job
    renewed = await store.version()
    assert claimed is not None
    claimed.status, claimed.finished_at = JobStatus.DONE, time.time()
    assert await other.replace(claimed, Expect(JobStatus.RUNNING, owner="box-b", attempts=1))
    seen.append(await store.version())
    assert await other.forget_finished(time.time() + 1) == 1
    seen.append(await store.version())
    assert all(a < b for a, b in itertools.pairwise(seen)), seen
    assert renewed == seen[2]


@pytest.mark.parametrize("store_url", ["sqlite", "redis"], indirect=True)
async def test_every_waiter_wakes_on_another_boxs_change_from_one_poll(store_opener: StoreOpener) -> None:
    box_a, box_b = await store_opener(), await store_opener()
    reads = Counter[str]()

    class Counted:
        async def version(self) -> int:
            reads["version"] += 1
            return await box_a.version()

    watcher = StoreWatcher(Counted(), poll_s=0.01)
    assert await asyncio.wait_for(watcher.wait(), 10)  # the first poll takes the baseline (and wakes once)
    marks = [watcher.mark() for _ in range(100)]
    waiters = [asyncio.create_task(watcher.wait(mark)) for mark in marks]
    await eventually(lambda: _true(watcher.polls >= 4))  # rounds with nothing changed
    assert not any(w.done() for w in waiters)
    await box_b.add(Job(text="다른 상자의 리뷰"))
    woke = await asyncio.wait_for(asyncio.gather(*waiters), 10)
    await watcher.close()
    assert woke == [True] * 100
    assert reads["version"] == watcher.polls  # one read per round, whatever the number of waiters


async def test_a_change_between_mark_and_wait_is_not_missed() -> None:
    watcher = StoreWatcher(_Fixed(), poll_s=60)
    since = watcher.mark()
    watcher.notify()  # this box changed something after the follower read
    assert await asyncio.wait_for(watcher.wait(since), 1) is True
    assert await watcher.wait(timeout_s=0) is False
    await watcher.close()


class _Fixed:
    async def version(self) -> int:
        return 1


async def _true(value: bool) -> bool:
    return value


def counting(calls: Counter[str], name: str, method: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
    async def counted(*args: Any, **kwargs: Any) -> Any:
        calls[name] += 1
        return await method(*args, **kwargs)

    return counted


async def test_idle_followers_do_not_read_the_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """While nothing changes, 10 streams × 20 tickets cost no job reads at all; when jobs move,
    every stream still sees every job to its end."""
    calls = Counter[str]()
    for name in ("get", "heartbeat"):
        monkeypatch.setattr(SqliteJobStore, name, counting(calls, name, getattr(SqliteJobStore, name)))
    scorer = GatedScorer()
    async with lab_app(tmp_path, scorer) as (app, client):
        ids = [(await submit(client, f"따라갈 리뷰 {i}"))["job_id"] for i in range(TICKETS)]
        await asyncio.to_thread(scorer.wait_entered)
        taps = [EventTap(app, "/api/queue/events", query(*ids)) for _ in range(FOLLOWERS)]
        for tap in taps:
            await tap.until(lambda t: all(events_of(t.events, job_id) for job_id in ids))
        calls.clear()
        # A window of five lease renewals (the keeper's clock, every 0.2 s here) with the model held.
        await eventually(lambda: _true(calls["heartbeat"] >= 5))
        idle_reads = calls["get"]
        scorer.open()
        for tap in taps:
            await tap.until(lambda t: t.ended)
    assert idle_reads == 0
    for tap in taps:
        assert all(events_of(tap.events, job_id)[-1]["status"] == "done" for job_id in ids)


async def test_followers_of_one_job_share_one_read_per_change() -> None:
    watcher = StoreWatcher(_Fixed(), poll_s=60)
    fetched = Counter[str]()
    gate = asyncio.Event()

    async def fetch() -> str:
        fetched["a"] += 1
        await gate.wait()
        return f"read {fetched['a']}"

    readers = [asyncio.create_task(watcher.read("a", fetch)) for _ in range(50)]
    leaving = asyncio.create_task(watcher.read("a", fetch))
    await eventually(lambda: _true(fetched["a"] == 1))  # the shared read has begun
    leaving.cancel()  # one follower leaves: the others' read goes on
    gate.set()
    first = await asyncio.gather(*readers)
    watcher.notify()  # a change: the next read is a fresh one
    second = await watcher.read("a", fetch)
    await watcher.close()
    assert first == ["read 1"] * 50 and second == "read 2" and fetched["a"] == 2


class _CountingService:
    """Stands in for TicketService: each status read is counted and held until released."""

    def __init__(self) -> None:
        self.reads = 0
        self.release = asyncio.get_running_loop().create_future()

    async def status(self, job_id: str) -> Any:
        self.reads += 1
        await self.release
        return Ticket(Job(text="리뷰", id=job_id, status=JobStatus.DONE), None, None)


async def test_streams_following_one_job_make_one_read() -> None:
    """The follower reads through the watcher: ten streams on one job cost one store read, not ten."""

    class NoStore:
        async def version(self) -> int:
            return 0

    service = _CountingService()
    follower = TicketFollower(service, Signals(NoStore(), 0.25), FollowConfig(poll_s=0.25))  # type: ignore[arg-type]

    async def first(stream: Any) -> Any:
        return await anext(stream)

    streams = [asyncio.create_task(first(follower.follow("job-1"))) for _ in range(10)]
    await eventually(lambda: _true(service.reads >= 1))
    service.release.set_result(None)
    tickets = await asyncio.gather(*streams)
    assert service.reads == 1
    assert all(ticket.job.id == "job-1" for ticket in tickets)
