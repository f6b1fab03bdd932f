"""Path 4, the worker: claim the next ticket, run it on the lane under a lease, write the result
only if the run still holds it (the fence), and keep house (leases, retries, expiry, webhooks)."""

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict

from app.engine.lane import InferenceLane
from app.jobs import lifecycle
from app.jobs.keeper import JobKeeper
from app.jobs.models import Expect, Job, JobStatus
from app.jobs.store import JobStore
from app.jobs.webhooks import WebhookDispatcher
from app.paths.pipeline import Outcome, Pipeline
from app.paths.ticket_config import WorkerConfig
from app.paths.ticket_state import LocalRun, Scored, Signals
from app.paths.tickets import SPEC

log = logging.getLogger(__name__)


class TicketWorker:
    """One per box: a worker loop, a keeper loop and (if webhooks are on) a delivery loop."""

    def __init__(
        self,
        store: JobStore,
        lane: InferenceLane,
        pipeline: Pipeline,
        config: WorkerConfig,
        signals: Signals,
        local: LocalRun,
        webhooks: WebhookDispatcher | None = None,
    ) -> None:
        self._store = store
        self._lane = lane
        self._pipeline = pipeline
        self._config = config
        self._signals = signals
        self._local = local
        self._webhooks = webhooks
        self._policy = lifecycle.RetryPolicy(config.max_attempts, config.retry_backoff_s)
        self._keeper = JobKeeper(
            store, owner=local.owner, lease_s=config.lease_s, keep_s=config.keep_s, policy=self._policy
        )
        self._tasks: list[asyncio.Task[None]] = []
        # Loops also check this flag: redis-py can swallow a task's cancellation mid-command.
        self._stopping = False
        self._draining = False  # the box is shutting down: housekeeping goes on, claiming does not
        self.on_done: Callable[[Job], None] | None = None  # the lesson's record: a ticket's end (app/lesson)

    def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._tasks = [
            loop.create_task(self._every(self._keeper.interval_s, self._keep), name="ticket-keeper"),
            loop.create_task(self._work(), name="ticket-worker"),
        ]
        if self._webhooks is not None:
            self._tasks.append(
                loop.create_task(self._every(self._config.poll_s, self._webhooks.deliver_due), name="ticket-webhooks")
            )

    def drain(self) -> None:
        """Claim nothing more; the run in progress goes on (it ends, or `stop` hands it back)."""
        self._draining = True
        self._signals.wakeup.set()

    async def stop(self) -> None:
        self._stopping = True
        self._signals.wakeup.set()
        for task in reversed(self._tasks):
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        if self._local.current is not None:  # give the job back now rather than after its lease
            job, inference = self._local.current
            inference.cancel()
            await self._store.replace(lifecycle.released(job), self._run_fence(job))
        if self._webhooks is not None:
            await self._webhooks.close()
        await self._signals.watch.close()

    @property
    def alive(self) -> bool:
        return bool(self._tasks) and all(not task.done() for task in self._tasks)

    async def _check_held(self, held: set[str]) -> None:
        """Stop our run if the job was canceled (on any box) or taken back from us.

        A heartbeat may have been answered just before our latest claim landed, so a
        job missing from `held` is read again before its run is stopped.
        """
        if self._local.current is None or self._local.current[0].id in held:
            return
        job, inference = self._local.current
        current = await self._store.get(job.id)
        ours = current is not None and current.status is JobStatus.RUNNING and current.owner == self._local.owner
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
            self._signals.notify()

    async def _work(self) -> None:
        wakeup = self._signals.wakeup
        while not (self._stopping or self._draining):
            try:
                job = await self._store.claim_next(self._local.owner, self._config.lease_s, time.time())
            except Exception:
                log.exception("claiming a job failed; trying again")
                job = None
            if job is None:
                wakeup.clear()
                try:
                    async with asyncio.timeout(self._config.poll_s):
                        await wakeup.wait()
                except TimeoutError:
                    pass
                continue
            self._signals.notify()
            await self._run(job)
            self._signals.notify()

    def _run_fence(self, job: Job) -> Expect:
        """Our run of this job: a write fails if the job was canceled or taken back meanwhile."""
        return Expect(JobStatus.RUNNING, owner=self._local.owner, attempts=job.attempts)

    async def _run(self, job: Job) -> None:
        inference = asyncio.get_running_loop().create_task(self._infer(job.text), name=f"ticket-run-{job.id[:8]}")
        self._local.begin(job, inference)
        try:
            await asyncio.wait([inference])
        finally:
            if not inference.done():  # the worker itself is stopping
                inference.cancel()
            else:
                self._local.current = None
        if inference.cancelled():
            log.info("job %s stopped: canceled or taken back; any result is discarded", job.id)
            return
        now = time.time()
        exc = inference.exception()
        if exc is not None:
            log.warning("job %s attempt %d failed: %r", job.id, job.attempts, exc)
            await self._store.replace(lifecycle.failed_once(job, exc, self._policy, now), self._run_fence(job))
            return
        scored = inference.result()
        finished = lifecycle.done(
            job,
            [asdict(t) for t in scored.ranking],
            inference_ms=round(scored.infer_s * 1000, 1),
            started_at=scored.started_at,
            now=now,
        )
        if await self._store.replace(finished, self._run_fence(job)):
            if finished.waited_ms is not None:
                self._pipeline.waited(SPEC.name, finished.waited_ms / 1000)
            if self.on_done is not None:
                self.on_done(finished)
        else:
            log.info("job %s finished but was canceled or taken back meanwhile; result discarded", job.id)

    async def _infer(self, text: str) -> Scored:
        """The review scored through the shared cache step."""
        started_at = time.time()
        loop = asyncio.get_running_loop()

        def on_start() -> None:  # on the lane thread: the hand-over is complete, followers read again
            self._local.started = time.monotonic()
            with contextlib.suppress(RuntimeError):  # the loop already closed: nobody is following
                loop.call_soon_threadsafe(self._signals.notify)

        async def run() -> Outcome:
            nonlocal started_at
            self._local.on_lane = True  # set in the same step that submits, so no ETA counts it twice
            result = await self._lane.run([text], on_start=on_start)
            # The lane may have been busy with other paths: the wait ends when inference starts.
            started_at = time.time() - (time.monotonic() - result.started_at)
            return Outcome(result.ranking(0), result.queued_s, result.infer_s)

        outcome, _ = await self._pipeline.through_cache(SPEC.name, text, run)
        return Scored(outcome.ranking, outcome.infer_s, started_at)
