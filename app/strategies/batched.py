"""Path 3: gather requests for a short window and run them as one inference on the lane."""

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from app.errors import BoxFull, InferenceFailed
from app.lane import InferenceLane
from app.paths import Outcome
from app.tally import BATCH_SIZE_BUCKETS, Tally, TallySnapshot

PATH = "batched"


@dataclass(frozen=True, slots=True)
class BatcherSnapshot:
    in_flight: int
    waiting: int
    last_batch_size: int
    skipped_gone: int
    closed: dict[str, int]  # batches formed, by why they closed
    sizes: TallySnapshot
    rejections: dict[str, int]


@dataclass(slots=True)
class _Waiter:
    text: str
    future: "asyncio.Future[Outcome]"
    arrived: float = field(default_factory=time.monotonic)


class MicroBatcher:
    """Owns the open batch, its timer and one future per request.

    A batch closes when it holds `max_size` requests ("full") or `window_s` after its
    first arrival ("timer"). A failure is set on every waiter of the batch; a waiter
    whose client went away before the batch closed is left out of it (and counted), and
    a closed batch whose waiters have all gone is withdrawn from the lane.

    With `max_wait_s` > 0, a newcomer whose predicted wait is longer is refused at once
    (429 + Retry-After) instead of joining a queue that only grows; 0 admits everyone.
    """

    name = PATH
    withdrawable = True

    def __init__(self, lane: InferenceLane, *, window_s: float, max_size: int, max_wait_s: float = 0.0) -> None:
        self._lane = lane
        self._window_s = window_s
        self._max_size = max_size
        self._max_wait_s = max_wait_s
        self._open: list[_Waiter] = []
        self._timer: asyncio.TimerHandle | None = None
        self._running: set[asyncio.Task[None]] = set()
        self.on_lane = 0  # closed batches handed to the lane, started or not
        self.in_flight = 0  # of those, the ones the lane is inferring now
        self.last_batch_size = 0
        self.skipped_gone = 0
        self._closed = {"full": 0, "timer": 0}
        self._sizes = Tally(BATCH_SIZE_BUCKETS)
        self._refused = {"queue_too_long": 0}

    @property
    def gathering(self) -> int:
        return len(self._open)

    @property
    def waiting(self) -> int:
        """Still gathering, or closed but queued behind other work on the lane."""
        return len(self._open) + self.on_lane - self.in_flight

    def predicted_wait_s(self) -> float:
        """The lane's backlog plus the open batch, at the measured seconds per review."""
        return self._lane.room.after_reviews(len(self._open))

    def snapshot(self) -> BatcherSnapshot:
        return BatcherSnapshot(
            self.in_flight,
            self.waiting,
            self.last_batch_size,
            self.skipped_gone,
            dict(self._closed),
            self._sizes.snapshot(),
            dict(self._refused),
        )

    async def run(self, text: str) -> Outcome:
        if self._max_wait_s > 0 and (predicted := self.predicted_wait_s()) > self._max_wait_s:
            self._refused["queue_too_long"] += 1
            raise BoxFull(
                f"Batches already queued would make you wait about {predicted:.0f} s "
                f"(limit {self._max_wait_s:g} s). Try again later.",
                predicted - self._max_wait_s + self._lane.room.per_review_s,
            )
        loop = asyncio.get_running_loop()
        waiter = _Waiter(text, loop.create_future())
        self._open.append(waiter)
        if len(self._open) >= self._max_size:
            self._close("full")
        elif self._timer is None:
            self._timer = loop.call_later(self._window_s, self._close, "timer")
        self._publish()
        return await waiter.future

    def _close(self, reason: str) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        batch = [w for w in self._open if not w.future.done()]
        gone = len(self._open) - len(batch)
        if gone:
            self.skipped_gone += gone
        self._open = []
        if not batch:
            self._publish()
            return
        self._closed[reason] = self._closed.get(reason, 0) + 1
        self._sizes.observe(len(batch))
        task = asyncio.get_running_loop().create_task(self._infer(batch), name=f"batch-{reason}")
        self._running.add(task)
        task.add_done_callback(self._running.discard)

    async def _infer(self, batch: list[_Waiter]) -> None:
        loop = asyncio.get_running_loop()
        started = finished = False

        def begin() -> None:  # on the loop, when the lane starts this batch
            nonlocal started
            if not finished:
                started = True
                self.in_flight += len(batch)
                self._publish()

        self.on_lane += len(batch)
        self._publish()
        lane_job = asyncio.ensure_future(
            self._lane.run([w.text for w in batch], on_start=lambda: self._on_loop(loop, begin))
        )

        def withdraw_if_all_gone(_: object) -> None:
            if all(w.future.done() for w in batch):
                lane_job.cancel()  # the lane skips it if it has not started

        for w in batch:
            w.future.add_done_callback(withdraw_if_all_gone)
        try:
            result = await lane_job
        except asyncio.CancelledError:
            if all(w.future.cancelled() for w in batch):
                return
            raise
        except Exception as exc:
            failure = InferenceFailed(f"Inference failed for a batch of {len(batch)}: {exc}")
            for w in batch:
                if not w.future.done():
                    w.future.set_exception(failure)
            return
        finally:
            finished = True
            self.on_lane -= len(batch)
            if started:
                self.in_flight -= len(batch)
            self._publish()
        self.last_batch_size = len(batch)
        for w, ranking in zip(batch, result.rankings, strict=True):
            if not w.future.done():
                wait_s = result.started_at - w.arrived
                w.future.set_result(Outcome(ranking, wait_s, result.infer_s, len(batch)))

    @staticmethod
    def _on_loop(loop: asyncio.AbstractEventLoop, callback: Callable[[], None]) -> None:
        """The lane calls back from its own thread; the counters belong to the event loop."""
        loop.call_soon_threadsafe(callback)

    def _publish(self) -> None:
        """Gauges are read at scrape time (snapshot); kept as the hook where state changes."""
