"""Path 4: a ticket at once instead of a held connection; one worker feeds jobs to the lane."""

import asyncio
import logging
import time
from dataclasses import asdict, dataclass

from app import metrics
from app.cache import ResultCache
from app.errors import JobNotFound, JobQueueFull
from app.jobs.models import Job, JobStatus
from app.jobs.store import JobStore
from app.lane import InferenceLane

PATH = "tickets"
log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Ticket:
    job: Job
    position: int | None  # jobs ahead of this one, the running one included
    eta_seconds: float | None  # until this job is done
    cache_hit: bool = False


class TicketService:
    """Accepts jobs up to `max_queued`, answers where each stands, and runs them in order."""

    def __init__(self, store: JobStore, lane: InferenceLane, cache: ResultCache, *, max_queued: int) -> None:
        self._store = store
        self._lane = lane
        self._cache = cache
        self._max_queued = max_queued
        self._wakeup = asyncio.Event()
        self._worker: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._worker = asyncio.get_running_loop().create_task(self._work(), name="ticket-worker")

    async def stop(self) -> None:
        if self._worker is not None:
            self._worker.cancel()
            await asyncio.gather(self._worker, return_exceptions=True)

    @property
    def worker_alive(self) -> bool:
        return self._worker is not None and not self._worker.done()

    def eta_s(self, queued_ahead: int) -> float:
        """Work already on the lane, plus the queued jobs ahead, plus this job."""
        return self._lane.backlog_s() + (queued_ahead + 1) * self._lane.clock.per_review_s

    async def _running(self) -> int:
        return (await self._store.counts()).get(JobStatus.RUNNING.value, 0)

    async def submit(self, text: str) -> Ticket:
        cached = self._cache.get(text)
        if cached is not None:
            metrics.CACHE_HITS.labels(PATH).inc()
            now = time.time()
            job = Job(text=text, status=JobStatus.DONE, started_at=now, finished_at=now, inference_ms=0.0)
            job.enqueued_at = now
            job.result = [asdict(t) for t in cached]
            await self._store.add(job)
            return Ticket(job, None, None, cache_hit=True)
        queued = await self._store.queued_count()
        if queued >= self._max_queued:
            metrics.REJECTIONS.labels(PATH, "job_queue_full").inc()
            raise JobQueueFull(f"The ticket queue is full ({queued} waiting). Try again later.", self.eta_s(queued - 1))
        job = Job(text=text)
        running = await self._running()
        await self._store.add(job)
        await self._publish()
        self._wakeup.set()
        return Ticket(job, running + queued, self.eta_s(queued))

    async def status(self, job_id: str) -> Ticket:
        job = await self._store.get(job_id)
        if job is None:
            raise JobNotFound(f"No job with id {job_id!r}.")
        queued_ahead = await self._store.position(job_id) if job.status is JobStatus.QUEUED else None
        if queued_ahead is not None:
            return Ticket(job, await self._running() + queued_ahead, self.eta_s(queued_ahead))
        if job.status is JobStatus.RUNNING:
            return Ticket(job, None, self._lane.remaining_s())
        return Ticket(job, None, None)

    async def _work(self) -> None:
        while True:
            job = await self._store.claim_next()
            if job is None:
                self._wakeup.clear()
                await self._wakeup.wait()
                continue
            await self._publish()
            await self._run(job)
            await self._publish()

    async def _run(self, job: Job) -> None:
        cached = self._cache.get(job.text)
        try:
            if cached is not None:
                metrics.CACHE_HITS.labels(PATH).inc()
                ranking, infer_s = cached, 0.0
            else:
                result = await self._lane.run([job.text])
                ranking, infer_s = result.rankings[0], result.infer_s
                # The lane may have been busy with other paths: the wait ends when inference starts.
                job.started_at = time.time() - (time.monotonic() - result.started_at)
                self._cache.put(job.text, ranking)
                metrics.INFERENCE_SECONDS.labels(PATH).observe(infer_s)
        except Exception as exc:
            log.warning("job %s failed: %s", job.id, exc)
            job.status, job.error = JobStatus.FAILED, f"inference failed: {exc}"
        else:
            job.status, job.result = JobStatus.DONE, [asdict(t) for t in ranking]
            job.inference_ms = round(infer_s * 1000, 1)
        job.finished_at = time.time()
        if job.waited_ms is not None:
            metrics.WAIT_SECONDS.labels(PATH).observe(job.waited_ms / 1000)
        await self._store.save(job)

    async def _publish(self) -> None:
        counts = await self._store.counts()
        for status, count in counts.items():
            metrics.JOBS.labels(status).set(count)
        metrics.WAITING.labels(PATH).set(counts.get(JobStatus.QUEUED.value, 0))
        metrics.IN_FLIGHT.labels(PATH).set(counts.get(JobStatus.RUNNING.value, 0))
