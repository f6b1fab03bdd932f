"""The one inference lane: a single thread that runs every inference of paths 2-4 in turn."""

import asyncio
import logging
import queue
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field

from app.engine.clock import ServiceClock
from app.engine.model import Ranking, Scorer, score_each
from app.engine.room import Room
from app.engine.turn import Turn, TurnOwner

log = logging.getLogger(__name__)


class DeadlinePassed(Exception):
    """The job's deadline passed while it waited for the lane; it was never inferred."""


@dataclass(frozen=True, slots=True)
class LaneResult:
    rankings: list[Ranking | None]  # None: left out mid-call, nobody awaited it any more
    started_at: float  # time.monotonic() when inference began
    queued_s: float  # time spent waiting for the lane itself
    infer_s: float

    def ranking(self, i: int = 0) -> Ranking:
        """Review i's ranking; only a review its own caller gave up on lacks one."""
        ranking = self.rankings[i]
        if ranking is None:
            raise RuntimeError(f"review {i} was left out: its caller had gone")
        return ranking


@dataclass(frozen=True, slots=True)
class LaneSnapshot:
    busy: bool
    current_batch: int
    pending_reviews: int
    completed: int
    failed: int
    skipped_gone: int
    skipped_deadline: int
    busy_s: float  # seconds spent in model calls so far, the running one included
    per_review_s: float
    samples: int


@dataclass(slots=True)
class _Job:
    texts: Sequence[str]
    deadline: float | None
    future: "Future[LaneResult]"  # a submitted job's result; a turn's owner hears `done` instead
    chars: int
    on_start: Callable[[], None] | None = None
    expected_s: float | None = None  # the submitter's own prediction (⑤'s, from tokens); None: the clock's, from chars
    owner: TurnOwner[LaneResult] | None = None  # a turn's: told each review scored, asked which are wanted
    abandoned: bool = False  # its awaiting caller was cancelled (set on the event loop, read here)
    enqueued_at: float = field(default_factory=time.monotonic)

    def awaited(self, i: int) -> bool:
        return not self.abandoned and (self.owner is None or self.owner.wanted(i))


def text_chars(texts: Sequence[str]) -> int:
    """The size unit of the cost model: characters, summed over a batch."""
    return sum(len(text) for text in texts)


class InferenceLane:
    """Owns the single inference thread and its FIFO; callers await `run`.

    Work whose caller has gone (future cancelled) or whose deadline passed is skipped
    when it reaches the front, and counted, instead of burning a second of CPU.
    """

    def __init__(self, scorer: Scorer, clock: ServiceClock | None = None) -> None:
        self._scorer = scorer
        self.clock = clock or ServiceClock()
        self._queue: queue.SimpleQueue[_Job | Turn[LaneResult] | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._work, name="inference-lane", daemon=True)
        self._pending = 0
        self._pending_chars = 0  # of the pending reviews without a prediction of their own
        self._pending_unpredicted = 0
        self._pending_expected_s = 0.0  # the predictions of the rest
        self.current_expected_s: float | None = None
        self._lock = threading.Lock()
        self.busy_since: float | None = None
        self._begun = 0  # inferences started, counted with busy_since (a turn learns whether it waited)
        self.current_batch = self.current_chars = 0
        self.skipped_gone = self.skipped_deadline = self.completed = self.failed = 0
        self._busy_s = 0.0  # finished model calls only; snapshot() adds the running one
        self.room = Room(self.backlog_s, self.remaining_s, lambda: self.clock.per_review_s, self.clock.estimate_s)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._queue.put(None)
        self._thread.join(timeout=30)

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    @property
    def pending_reviews(self) -> int:
        """Reviews handed to the lane and not yet started: work ahead of anyone new."""
        return self._pending

    @property
    def busy(self) -> bool:
        return self.busy_since is not None

    def remaining_s(self) -> float:
        """Best guess of the time left on the inference running now (0 if idle)."""
        started = self.busy_since
        if started is None:
            return 0.0
        expected = self.current_expected_s
        if expected is None:
            expected = self.clock.estimate_s(max(self.current_batch, 1), self.current_chars)
        return max(expected - (time.monotonic() - started), 0.0)

    def backlog_s(self) -> float:
        """Seconds of work already ahead of a newcomer: the running job plus the FIFO."""
        queued_s = self._pending_expected_s + self.clock.estimate_s(self._pending_unpredicted, self._pending_chars)
        return self.remaining_s() + queued_s

    def snapshot(self) -> LaneSnapshot:
        with self._lock:  # busy time and busy_since change together, so the counter never runs back
            started, busy_s = self.busy_since, self._busy_s
        running_s = 0.0 if started is None else max(time.monotonic() - started, 0.0)
        return LaneSnapshot(
            busy=started is not None,
            current_batch=self.current_batch,
            pending_reviews=self._pending,
            completed=self.completed,
            failed=self.failed,
            skipped_gone=self.skipped_gone,
            skipped_deadline=self.skipped_deadline,
            busy_s=busy_s + running_s,
            per_review_s=self.clock.per_review_s,
            samples=self.clock.samples,
        )

    def submit(
        self, texts: Sequence[str], deadline: float | None = None, on_start: Callable[[], None] | None = None
    ) -> "Future[LaneResult]":
        """`on_start` is called on the lane thread when inference begins (never for skipped work)."""
        return self._enqueue(texts, deadline, on_start).future

    def _enqueue(
        self,
        texts: Sequence[str],
        deadline: float | None,
        on_start: Callable[[], None] | None,
        expected_s: float | None = None,
    ) -> _Job:
        job = _Job(texts, deadline, Future(), text_chars(texts), on_start, expected_s)
        with self._lock:
            self._pending += len(texts)
            self._count(job, +1)
        self._queue.put(job)
        return job

    def _count(self, job: _Job, sign: int) -> None:
        """The backlog's account of a pending job (call with the lock held)."""
        if job.expected_s is None:
            self._pending_unpredicted += sign * len(job.texts)
            self._pending_chars += sign * job.chars
        else:
            self._pending_expected_s = max(self._pending_expected_s + sign * job.expected_s, 0.0)

    async def run(
        self,
        texts: Sequence[str],
        deadline: float | None = None,
        on_start: Callable[[], None] | None = None,
        expected_s: float | None = None,
    ) -> LaneResult:
        """Infer on the lane; cancelling the awaiting task withdraws the job if not started, and stops it at
        the model's next call if it has (a streaming scorer checks between calls). `expected_s`: the caller's
        own prediction of its cost, which the backlog and the running job's remainder then count."""
        job = self._enqueue(texts, deadline, on_start, expected_s)
        try:
            return await asyncio.wrap_future(job.future)
        except asyncio.CancelledError:
            job.abandoned = True
            raise

    def turn(self, owner: TurnOwner[LaneResult]) -> None:
        """A place in the FIFO whose texts are taken when the lane reaches it (③ forms its batch then): the lane
        calls `owner.take` on its thread and infers what it returns at once, or goes on to its next work."""
        with self._lock:  # inferences begun so far, less the one running now: `take` learns if it waited for others
            self._queue.put(Turn(owner, self._begun - (self.busy_since is not None)))

    def _work(self) -> None:
        while (job := self._queue.get()) is not None:
            if isinstance(job, Turn):
                self._take(job)
                continue
            with self._lock:
                self._pending -= len(job.texts)
                self._count(job, -1)
            if not job.future.set_running_or_notify_cancel():
                self.skipped_gone += 1
                continue
            if job.deadline is not None and time.monotonic() > job.deadline:
                self.skipped_deadline += 1
                job.future.set_exception(DeadlinePassed())
                continue
            self._infer(job)

    def _take(self, turn: Turn[LaneResult]) -> None:
        try:
            texts = turn.owner.take(self._begun > turn.begun_before)
        except Exception:  # an owner's bug must never kill the lane
            log.exception("a turn's owner failed to hand over its work")
            return
        if texts is not None:
            self._infer(_Job(texts, None, Future(), text_chars(texts), owner=turn.owner))

    def _infer(self, job: _Job) -> None:
        """The lane is idle again before the job's future resolves: whoever sees a result sees the lane as it is."""
        started = time.monotonic()
        self.current_batch = len(job.texts)
        self.current_chars = job.chars
        self.current_expected_s = job.expected_s
        with self._lock:
            self.busy_since = started
            self._begun += 1
        try:
            outcome = self._score(job, started)
        finally:
            with self._lock:
                self._busy_s += time.monotonic() - started
                self.busy_since = None
            self.current_batch = self.current_chars = 0
            self.current_expected_s = None
        if job.owner is not None:
            job.owner.done(outcome)
        elif isinstance(outcome, LaneResult):
            job.future.set_result(outcome)
        else:
            job.future.set_exception(outcome)

    def _score(self, job: _Job, started: float) -> LaneResult | Exception:
        """Each review goes to its turn's owner as it is scored; those nobody awaits are left out at the next call."""
        rankings: list[Ranking | None] = [None] * len(job.texts)
        try:
            if job.on_start is not None:
                job.on_start()
            for i, ranking in score_each(self._scorer, job.texts, job.awaited):
                rankings[i] = ranking
                if job.owner is not None:
                    job.owner.scored(i, ranking, started, time.monotonic())
            missing = [i for i, r in enumerate(rankings) if r is None and job.awaited(i)]
            if missing:
                raise RuntimeError(f"scorer returned no ranking for {len(missing)} of {len(job.texts)} texts")
        except Exception as exc:  # a bad job must never kill the lane
            log.exception("inference failed")
            self.failed += 1
            return exc
        finished = time.monotonic()
        scored = [t for t, r in zip(job.texts, rankings, strict=True) if r is not None]
        if len(scored) < len(job.texts):  # partly run for nobody: no clean sample of what a review costs
            if not scored:
                self.skipped_gone += 1
        else:
            self.clock.observe(finished - started, len(job.texts), job.chars)
        if scored:
            self.completed += 1
        return LaneResult(rankings, started, started - job.enqueued_at, finished - started)
