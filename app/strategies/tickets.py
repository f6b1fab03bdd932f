"""Path 4: a ticket at once instead of a held connection; a worker feeds jobs from the store to the lane.

The store (sqlite by default, Redis for several boxes) holds every ticket, so a crash
loses none: a job whose worker died is taken back when its lease runs out and run again.
"""

import asyncio
import hashlib
import json
import logging
import math
import time
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass

from app import metrics
from app.cache import ResultCache
from app.errors import IdempotencyConflict, InvalidJob, JobAlreadyFinished, JobNotFound, JobQueueFull, WebhookRefused
from app.jobs import lifecycle
from app.jobs.keeper import JobKeeper
from app.jobs.models import Expect, Job, JobStatus
from app.jobs.store import Ahead, JobStore, QueueFull
from app.jobs.watch import StoreWatcher
from app.jobs.webhooks import WebhookDispatcher, resolve_target
from app.lane import InferenceLane
from app.merge import merged
from app.model import Ranking
from app.settings import Settings

PATH = "tickets"
MIN_TIME_IN_QUEUE_S = 1.0
MAX_FOLLOWED_JOBS = 100  # one stream for a whole burst (the page fires at most 50)
log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class JobRequest:
    text: str
    webhook_url: str | None = None
    max_time_in_queue_s: float | None = None
    idempotency_key: str | None = None

    def fingerprint(self) -> str:
        """What "the same body" means for an Idempotency-Key."""
        body = {"text": self.text, "webhook_url": self.webhook_url, "max_time_in_queue_s": self.max_time_in_queue_s}
        return hashlib.sha256(json.dumps(body, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class Ticket:
    job: Job
    position: int | None  # jobs ahead of this one, the running ones included
    eta_seconds: float | None  # until this job is done
    cache_hit: bool = False
    replayed: bool = False  # answered from an earlier request with the same Idempotency-Key


@dataclass(frozen=True, slots=True)
class JobMissing:
    """A followed job that does not exist (any more): never submitted, or already cleaned up."""

    job_id: str


class TicketService:
    """Accepts jobs up to `queue_max_jobs`, answers where each stands, and runs them in order."""

    def __init__(
        self,
        store: JobStore,
        lane: InferenceLane,
        cache: ResultCache,
        settings: Settings,
        webhooks: WebhookDispatcher | None = None,
    ) -> None:
        self._store = store
        self._lane = lane
        self._cache = cache
        self._settings = settings
        self._webhooks = webhooks
        self._policy = lifecycle.RetryPolicy(settings.job_max_attempts, settings.job_retry_backoff_s)
        self.owner = f"{uuid.uuid4().hex[:12]}"  # this box's worker, in leases
        self._keeper = JobKeeper(
            store,
            owner=self.owner,
            lease_s=settings.job_lease_s,
            keep_s=settings.jobs_keep_s,
            policy=self._policy,
        )
        self._wakeup = asyncio.Event()
        self._watch = StoreWatcher(store, settings.job_poll_s)  # one store poll for every follower
        self._tasks: list[asyncio.Task[None]] = []
        # Loops also check this flag: redis-py can swallow a task's cancellation mid-command.
        self._stopping = False
        self._running: tuple[Job, asyncio.Task[tuple[Ranking, float, float]]] | None = None

    # -- lifecycle of the service itself --------------------------------------------

    def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._tasks = [
            loop.create_task(self._every(self._keeper.interval_s, self._keep), name="ticket-keeper"),
            loop.create_task(self._work(), name="ticket-worker"),
        ]
        if self._webhooks is not None:
            self._tasks.append(
                loop.create_task(
                    self._every(self._settings.job_poll_s, self._webhooks.deliver_due), name="ticket-webhooks"
                )
            )

    async def stop(self) -> None:
        self._stopping = True
        self._wakeup.set()
        for task in reversed(self._tasks):
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        if self._running is not None:  # give the job back now rather than after its lease
            job, inference = self._running
            inference.cancel()
            await self._store.replace(lifecycle.released(job), self._run_fence(job))
        if self._webhooks is not None:
            await self._webhooks.close()
        await self._watch.close()

    @property
    def worker_alive(self) -> bool:
        return bool(self._tasks) and all(not task.done() for task in self._tasks)

    # -- what clients ask -----------------------------------------------------------

    def eta_s(self, ahead: Ahead, own_chars: int, workers: int = 1) -> float:
        """Work already on this box's lane, plus the queued jobs ahead shared among the live workers, plus this job.

        Each job costs what its length predicts (ServiceClock.estimate_s), not one average:
        a long review ahead delays everyone behind it more than a short one.
        """
        clock = self._lane.clock
        queued_s = clock.estimate_s(ahead.jobs, ahead.chars) / max(workers, 1)
        return self._lane.backlog_s() + queued_s + clock.estimate_s(1, own_chars)

    async def submit(self, request: JobRequest) -> Ticket:
        if request.idempotency_key is not None:
            held = await self._store.get_by_idempotency_key(request.idempotency_key)
            if held is not None:
                return await self._replay(held, request)
        now = time.time()
        time_in_queue_s = self._time_in_queue_s(request.max_time_in_queue_s)
        if request.webhook_url is not None:
            await self._check_webhook(request.webhook_url)
        job = Job(
            text=request.text,
            enqueued_at=now,
            run_at=now,
            expires_at=now + time_in_queue_s,
            idempotency_key=request.idempotency_key,
            request_hash=request.fingerprint(),
            webhook_url=request.webhook_url,
        )
        cached = self._cache.get(request.text)
        if cached is not None:
            metrics.CACHE_HITS.labels(PATH).inc()
            done = lifecycle.done(job, [asdict(t) for t in cached], inference_ms=0.0, started_at=now, now=now)
            stored, created = await self._store.add(done)
            return Ticket(stored, None, None, cache_hit=True) if created else await self._replay(stored, request)
        try:
            stored, created = await self._store.add(job, max_queued=self._settings.queue_max_jobs)
        except QueueFull as full:
            metrics.REJECTIONS.labels(PATH, "job_queue_full").inc()
            until_seat_s = self._lane.backlog_s() + full.queued * self._lane.clock.per_review_s
            raise JobQueueFull(
                f"The ticket queue is full ({full.queued} waiting). Try again later.", until_seat_s
            ) from None
        if not created:
            return await self._replay(stored, request)
        # Read before waking the worker, which may claim the job at once.
        ahead = await self._store.ahead(stored.id) or Ahead(0, 0)
        self._notify()
        workers = await self._store.live_workers(now)
        return Ticket(stored, stored.ahead_at_add, self.eta_s(ahead, stored.chars, workers))

    async def status(self, job_id: str) -> Ticket:
        job = await self._store.get(job_id)
        if job is None:
            raise JobNotFound(f"No job with id {job_id!r}.")
        return await self._ticket(job)

    async def cancel(self, job_id: str) -> Ticket:
        """A queued job never reaches the model; a running one is marked canceled and its result dropped."""
        for _ in range(5):  # the job may move between our read and our write: read again
            job = await self._store.get(job_id)
            if job is None:
                raise JobNotFound(f"No job with id {job_id!r}.")
            if job.status.terminal:
                raise JobAlreadyFinished(f"Job {job_id!r} is already {job.status.value}; nothing to cancel.")
            if await self._store.replace(lifecycle.canceled(job, time.time()), Expect(job.status)):
                if self._running is not None and self._running[0].id == job_id:
                    self._running[1].cancel()  # running here: stop waiting for the lane now
                self._notify()
                return await self.status(job_id)
        raise JobAlreadyFinished(f"Job {job_id!r} kept changing; try again.")

    async def follow(self, job_id: str, keepalive_s: float = 15.0) -> AsyncGenerator[Ticket | None, None]:
        """Each change of status, position or attempts, ending with the terminal state.

        Yields None after `keepalive_s` without a change, so a stream can show it is alive.
        """
        last: tuple[object, ...] | None = None
        quiet_since = time.monotonic()
        while True:
            since = self._watch.mark()  # before the read: a change after it ends the wait below
            try:
                ticket = await self._watch.read(job_id, lambda: self.status(job_id))  # one read per change
            except JobNotFound:
                return
            job = ticket.job
            seen = (job.status, ticket.position, job.attempts, job.webhook_state)
            if seen != last:
                last, quiet_since = seen, time.monotonic()
                yield ticket
            elif time.monotonic() - quiet_since >= keepalive_s:
                quiet_since = time.monotonic()
                yield None
            if job.status.terminal:
                return
            await self._watch.wait(since, keepalive_s)  # a change on any box, or time for a keep-alive

    async def follow_many(
        self, job_ids: Sequence[str], keepalive_s: float = 15.0
    ) -> AsyncGenerator[Ticket | JobMissing | None, None]:
        """`follow` for several jobs over one stream: every job's changes in its own order, ending
        once each job is terminal or missing.

        One stream instead of one per job, because a browser holds a connection per open stream and
        has only six per host. Raises before anything streams if no listed job exists; an unknown job
        among known ones is reported as JobMissing. Yields None after `keepalive_s` with no change at all.
        """
        wanted = list(dict.fromkeys(job_ids))  # a job listed twice is followed once
        if not 1 <= len(wanted) <= MAX_FOLLOWED_JOBS:
            raise InvalidJob(f"Follow between 1 and {MAX_FOLLOWED_JOBS} jobs at once; got {len(wanted)}.")
        for job_id in wanted:
            if await self._store.get(job_id) is not None:
                break
        else:
            raise JobNotFound(f"None of the {len(wanted)} listed jobs exists.")
        followers = [self._follow_to_end(job_id) for job_id in wanted]
        return merged(followers, quiet_s=keepalive_s, name="ticket-follow")

    # -- internals ------------------------------------------------------------------

    async def _follow_to_end(self, job_id: str) -> AsyncIterator[Ticket | JobMissing]:
        """One job's changes; JobMissing if it vanishes (or never was) before a terminal state."""
        last: Ticket | None = None
        async for ticket in self.follow(job_id, keepalive_s=math.inf):  # the merged stream keeps alive
            if ticket is not None:
                last = ticket
                yield ticket
        if last is None or not last.job.status.terminal:
            yield JobMissing(job_id)

    def _time_in_queue_s(self, asked: float | None) -> float:
        if asked is None:
            return self._settings.job_max_time_in_queue_s
        cap = self._settings.job_max_time_in_queue_cap_s
        if not MIN_TIME_IN_QUEUE_S <= asked <= cap:
            raise InvalidJob(f"`max_time_in_queue_s` must be between {MIN_TIME_IN_QUEUE_S:g} and {cap:g} seconds.")
        return asked

    async def _check_webhook(self, url: str) -> None:
        if self._webhooks is None:
            raise WebhookRefused("Webhooks are off on this box: the operator has not set LAB_WEBHOOK_SECRET.")
        await resolve_target(url, allow_private=self._settings.webhook_allow_private)

    async def _replay(self, held: Job, request: JobRequest) -> Ticket:
        if held.request_hash != request.fingerprint():
            raise IdempotencyConflict(
                # Never name the job holding the key: its id is enough to cancel another client's job.
                f"Idempotency-Key {request.idempotency_key!r} was already used with a different body; "
                "use a new key for a new request."
            )
        ticket = await self._ticket(held)
        return Ticket(ticket.job, ticket.position, ticket.eta_seconds, replayed=True)

    async def _ticket(self, job: Job) -> Ticket:
        now = time.time()
        for _ in range(3):  # claimed between our two reads: read it again
            if job.status is not JobStatus.QUEUED:
                break
            ahead = await self._store.ahead(job.id)
            if ahead is None:
                job = await self._store.get(job.id) or job
                continue
            running = (await self._store.counts())[JobStatus.RUNNING.value]
            own_s = self._lane.clock.estimate_s(1, job.chars)
            eta = self.eta_s(ahead, job.chars, await self._store.live_workers(now))
            backing_off = job.run_at - now + own_s  # a retry waits out its backoff
            return Ticket(job, running + ahead.jobs, max(eta, backing_off))
        if job.status is JobStatus.RUNNING:
            if job.owner == self.owner:
                return Ticket(job, None, self._lane.remaining_s())
            elapsed = now - (job.started_at or now)
            return Ticket(job, None, max(self._lane.clock.estimate_s(1, job.chars) - elapsed, 0.0))
        return Ticket(job, None, None)

    def _notify(self) -> None:
        """Wake the worker and every follower on this box."""
        self._wakeup.set()
        self._watch.notify()

    async def _check_held(self, held: set[str]) -> None:
        """Stop our run if the job was canceled (on any box) or taken back from us.

        A heartbeat may have been answered just before our latest claim landed, so a
        job missing from `held` is read again before its run is stopped.
        """
        if self._running is None or self._running[0].id in held:
            return
        job, inference = self._running
        current = await self._store.get(job.id)
        ours = current is not None and current.status is JobStatus.RUNNING and current.owner == self.owner
        if not ours or current is None or current.attempts != job.attempts:
            inference.cancel()

    async def _every(self, interval_s: float, action: Callable[[], Awaitable[object]]) -> None:
        while not self._stopping:
            try:
                await action()
            except Exception:  # a store hiccup must not end housekeeping for good
                log.exception("ticket housekeeping failed; trying again")
            await asyncio.sleep(interval_s)

    async def _keep(self) -> None:
        held, changed = await self._keeper.tick()
        await self._check_held(held)
        if changed:
            self._notify()

    async def _work(self) -> None:
        while not self._stopping:
            try:
                job = await self._store.claim_next(self.owner, self._settings.job_lease_s, time.time())
            except Exception:
                log.exception("claiming a job failed; trying again")
                job = None
            if job is None:
                self._wakeup.clear()
                try:
                    async with asyncio.timeout(self._settings.job_poll_s):
                        await self._wakeup.wait()
                except TimeoutError:
                    pass
                continue
            self._notify()
            await self._run(job)
            self._notify()

    def _run_fence(self, job: Job) -> Expect:
        """Our run of this job: a write fails if the job was canceled or taken back meanwhile."""
        return Expect(JobStatus.RUNNING, owner=self.owner, attempts=job.attempts)

    async def _run(self, job: Job) -> None:
        inference = asyncio.get_running_loop().create_task(self._infer(job.text), name=f"ticket-run-{job.id[:8]}")
        self._running = (job, inference)
        try:
            await asyncio.wait([inference])
        finally:
            if not inference.done():  # the worker itself is stopping
                inference.cancel()
            else:
                self._running = None
        if inference.cancelled():
            log.info("job %s stopped: canceled or taken back; any result is discarded", job.id)
            return
        now = time.time()
        exc = inference.exception()
        if exc is not None:
            log.warning("job %s attempt %d failed: %r", job.id, job.attempts, exc)
            await self._store.replace(lifecycle.failed_once(job, exc, self._policy, now), self._run_fence(job))
            return
        ranking, infer_s, started_at = inference.result()
        finished = lifecycle.done(
            job, [asdict(t) for t in ranking], inference_ms=round(infer_s * 1000, 1), started_at=started_at, now=now
        )
        if await self._store.replace(finished, self._run_fence(job)):
            if finished.waited_ms is not None:
                metrics.WAIT_SECONDS.labels(PATH).observe(finished.waited_ms / 1000)
        else:
            log.info("job %s finished but was canceled or taken back meanwhile; result discarded", job.id)

    async def _infer(self, text: str) -> tuple[Ranking, float, float]:
        """(ranking, inference seconds, wall-clock start of inference)."""
        cached = self._cache.get(text)
        if cached is not None:
            metrics.CACHE_HITS.labels(PATH).inc()
            return cached, 0.0, time.time()
        result = await self._lane.run([text])
        # The lane may have been busy with other paths: the wait ends when inference starts.
        started_at = time.time() - (time.monotonic() - result.started_at)
        self._cache.put(text, result.rankings[0])
        metrics.INFERENCE_SECONDS.labels(PATH).observe(result.infer_s)
        return result.rankings[0], result.infer_s, started_at

    async def publish_metrics(self) -> None:
        """Job gauges from the store, the truth (jobs from the cache, jobs other boxes hold).

        Called at scrape time, so the worker does not query the store between jobs.
        """
        counts = await self._store.counts()
        for status, count in counts.items():
            metrics.JOBS.labels(status).set(count)
        metrics.WAITING.labels(PATH).set(counts.get(JobStatus.QUEUED.value, 0))
        metrics.IN_FLIGHT.labels(PATH).set(counts.get(JobStatus.RUNNING.value, 0))
