"""Path 4, the service: accept a ticket at once, say where it stands (position, ETA), cancel it.

The store (sqlite by default, Redis for several boxes) holds every ticket, so a crash loses
none. The worker that runs them is app/paths/ticket_worker.py; the event streams that
follow them are app/paths/ticket_follow.py.
"""

import hashlib
import json
import time
from dataclasses import asdict, dataclass, replace

from app.engine.room import Room
from app.errors import (
    IdempotencyConflict,
    InvalidJob,
    JobAlreadyFinished,
    JobNotFound,
    JobQueueFull,
    WebhookRefused,
)
from app.jobs import lifecycle
from app.jobs.models import Expect, Job, JobStatus
from app.jobs.ssrf import resolve_target
from app.jobs.store import Ahead, JobStore, QueueFull, empty_counts
from app.paths.pipeline import Pipeline
from app.paths.registry import Load, spec
from app.paths.ticket_config import MIN_TIME_IN_QUEUE_S, ServiceConfig
from app.paths.ticket_state import LocalRun, Signals

SPEC = spec("tickets")


@dataclass(frozen=True, slots=True)
class JobRequest:
    text: str
    webhook_url: str | None = None
    max_time_in_queue_s: float | None = None
    idempotency_key: str | None = None

    def fingerprint(self) -> str:
        """What "the same body" means for an Idempotency-Key (text checked as valid Unicode already;
        `surrogatepass` keeps hashing total anyway)."""
        body = {"text": self.text, "webhook_url": self.webhook_url, "max_time_in_queue_s": self.max_time_in_queue_s}
        encoded = json.dumps(body, sort_keys=True, ensure_ascii=False).encode("utf-8", "surrogatepass")
        return hashlib.sha256(encoded).hexdigest()


@dataclass(frozen=True, slots=True)
class Ticket:
    job: Job
    position: int | None  # jobs ahead of this one, the running ones included
    eta_seconds: float | None  # until this job is done
    cache_hit: bool = False
    replayed: bool = False  # answered from an earlier request with the same Idempotency-Key


@dataclass(frozen=True, slots=True)
class TicketsSnapshot:
    jobs: dict[str, int]  # per status, from the store: the truth across boxes and the cache
    rejections: dict[str, int]
    store_problem: str | None  # why the store cannot keep tickets now (deleted file, Redis down), else None


class TicketService:
    """Accepts jobs up to `queue_max_jobs` and answers where each stands; the worker runs them."""

    spec = SPEC

    def __init__(
        self,
        store: JobStore,
        room: Room,
        pipeline: Pipeline,
        config: ServiceConfig,
        signals: Signals,
        local: LocalRun,
    ) -> None:
        self._store = store
        self._room = room
        self._pipeline = pipeline
        self._config = config
        self._signals = signals
        self._local = local
        self._refused = {"job_queue_full": 0}
        self._jobs = empty_counts()  # as the last snapshot() read them from the store

    def retune(self, *, queue_max_jobs: int) -> None:
        """An instructor's change: tickets waiting beyond this are refused from the next submission on."""
        self._config = replace(self._config, queue_max_jobs=queue_max_jobs)

    def eta_s(self, ahead: Ahead, own_chars: int, workers: int = 1) -> float:
        """Work already on this box's lane, plus the queued jobs ahead shared among the live workers, plus this job.

        Each job costs what its length predicts, not one average: a long review ahead delays
        everyone behind it more than a short one.
        """
        return self._room.after_jobs(ahead.jobs, ahead.chars, own_chars, workers) + self._claimed_s()

    def _claimed_s(self) -> float:
        """A job this box has claimed but not yet handed to the lane: in no backlog, still ahead of everyone."""
        chars = self._local.claimed_chars()
        return 0.0 if chars is None else self._room.one(chars)

    async def submit(self, request: JobRequest) -> Ticket:
        if request.idempotency_key is not None:
            held = await self._store.get_by_idempotency_key(request.idempotency_key)
            if held is not None:
                return await self._replay(held, request)
        now = time.time()
        time_in_queue_s = self._time_in_queue_s(request.max_time_in_queue_s)
        webhook_url = None if request.webhook_url is None else await self._check_webhook(request.webhook_url)
        job = Job(
            text=request.text,
            enqueued_at=now,
            run_at=now,
            expires_at=now + time_in_queue_s,
            idempotency_key=request.idempotency_key,
            request_hash=request.fingerprint(),
            webhook_url=webhook_url,
        )
        cached = self._pipeline.cached(SPEC.name, request.text)
        if cached is not None:
            done = lifecycle.done(job, [asdict(t) for t in cached], inference_ms=0.0, started_at=now, now=now)
            stored, created = await self._store.add(done)
            return Ticket(stored, None, None, cache_hit=True) if created else await self._replay(stored, request)
        try:
            stored, created = await self._store.add(job, max_queued=self._config.queue_max_jobs)
        except QueueFull as full:
            self._refused["job_queue_full"] += 1
            raise JobQueueFull(
                f"The ticket queue is full ({full.queued} waiting). Try again later.",
                self._room.after_reviews(full.queued),
                reason="job_queue_full",
                waited_s=0.0,
            ) from None
        if not created:
            return await self._replay(stored, request)
        # Read before waking the worker, which may claim the job at once.
        ahead = await self._store.ahead(stored.id) or Ahead(0, 0)
        self._signals.notify()
        workers = await self._store.live_workers(now)
        return Ticket(stored, stored.ahead_at_add, self.eta_s(ahead, stored.chars, workers))

    async def status(self, job_id: str) -> Ticket:
        job = await self._store.get(job_id)
        if job is None:
            raise JobNotFound(f"No job with id {job_id!r}.")
        return await self._ticket(job)

    async def exists(self, job_id: str) -> bool:
        return await self._store.get(job_id) is not None

    async def cancel(self, job_id: str) -> Ticket:
        """A queued job never reaches the model; a running one is marked canceled and its result dropped."""
        for _ in range(5):  # the job may move between our read and our write: read again
            job = await self._store.get(job_id)
            if job is None:
                raise JobNotFound(f"No job with id {job_id!r}.")
            if job.status.terminal:
                raise JobAlreadyFinished(f"Job {job_id!r} is already {job.status.value}; nothing to cancel.")
            if await self._store.replace(lifecycle.canceled(job, time.time()), Expect(job.status)):
                self._local.stop(job_id)
                self._signals.notify()
                return await self.status(job_id)
        raise JobAlreadyFinished(f"Job {job_id!r} kept changing; try again.")

    async def snapshot(self) -> TicketsSnapshot:
        problem = await self._store.check()
        jobs = empty_counts() if problem is not None else await self._store.counts()  # a lost store has none
        self._jobs = jobs
        return TicketsSnapshot(jobs, dict(self._refused), problem)

    def load(self) -> Load:
        """The store's counts as the last `snapshot()` read them (async: /metrics and /api/stats call it first)."""
        return Load(self._jobs.get("running", 0), self._jobs.get("queued", 0), dict(self._refused))

    def _time_in_queue_s(self, asked: float | None) -> float:
        if asked is None:
            return self._config.time_in_queue_s
        cap = self._config.time_in_queue_cap_s
        if not MIN_TIME_IN_QUEUE_S <= asked <= cap:
            raise InvalidJob(f"`max_time_in_queue_s` must be between {MIN_TIME_IN_QUEUE_S:g} and {cap:g} seconds.")
        return asked

    async def _check_webhook(self, url: str) -> str:
        """The URL to keep on the job: checked now, its host in ASCII (IDNA)."""
        if not self._config.webhooks_on:
            raise WebhookRefused("Webhooks are off on this box: the operator has not set LAB_WEBHOOK_SECRET.")
        return (await resolve_target(url, allow_private=self._config.webhook_allow_private)).url

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
        for attempt in range(3):  # claimed between our two reads: read it again
            if job.status is not JobStatus.QUEUED:
                break
            claimed = self._local.current  # this box's run before the store's reads
            ahead = await self._store.ahead(job.id)
            if ahead is None:
                job = await self._store.get(job.id) or job
                continue
            running = (await self._store.counts())[JobStatus.RUNNING.value]
            workers = await self._store.live_workers(now)
            if self._local.current is not claimed and attempt < 2:
                # Our worker claimed a job meanwhile: read as queued ahead, it may be on the lane too (counted twice).
                continue
            own_s = self._room.one(job.chars)
            eta = self.eta_s(ahead, job.chars, workers)
            backing_off = job.run_at - now + own_s  # a retry waits out its backoff
            return Ticket(job, running + ahead.jobs, max(eta, backing_off))
        if job.status is JobStatus.RUNNING:
            if job.owner == self._local.owner:
                if self._local.started is not None:  # the lane runs it now
                    return Ticket(job, None, self._room.remaining_s())
                # Claimed, not yet inferring: what the lane holds (this job once handed over), plus this job before.
                return Ticket(job, None, self._room.after_reviews(0) + self._claimed_s())
            elapsed = now - (job.started_at or now)
            return Ticket(job, None, max(self._room.one(job.chars) - elapsed, 0.0))
        return Ticket(job, None, None)
