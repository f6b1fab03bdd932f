"""Path 3: gather requests while the lane cannot take them, and run each gathering as one inference."""

import asyncio
import contextlib
from collections import deque
from collections.abc import Callable

from app.errors import BoxFull
from app.lane import InferenceLane
from app.paths import Outcome
from app.strategies.batch import BATCH_CLOSE_REASONS, BatcherSnapshot, Waiter, fail, resolve
from app.tally import BATCH_SIZE_BUCKETS, Tally

PATH = "batched"


class MicroBatcher:
    """Owns the batches it holds back, its window timer and one future per request.

    A batch goes to the lane when the lane can take it, like Triton's dynamic batcher or
    LitServe's batched loop, never earlier (a batch queued behind other work stops growing):

    - lane idle: the first request opens a batch and waits up to `window_s` for company;
      the batch goes when it is full (`full`) or the window ends (`timer`);
    - lane busy: newcomers join the open batch, which goes the moment the lane is done
      with its current job (`lane_free`); a batch that fills up meanwhile is closed and
      waits its turn, and the next arrivals open another.

    At most one of our batches sits on the lane's queue unstarted, so the rest keep
    growing. A waiter whose client left before its batch went is left out (and counted);
    a batch on the lane whose waiters have all gone is withdrawn. If a batch fails, each
    member is retried alone, so one text the model cannot score fails only its own request.

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
        self._open: list[Waiter] = []
        self._full: deque[list[Waiter]] = deque()  # closed by size, not yet on the lane
        self._timer: asyncio.TimerHandle | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._queued_on_lane = False  # one of our batches is on the lane's queue, not started
        self._running: set[asyncio.Task[None]] = set()
        self.on_lane = 0  # reviews of batches handed to the lane, started or not
        self.in_flight = 0  # of those, the ones the lane is inferring now
        self.last_batch_size = 0
        self.skipped_gone = 0
        self._closed = dict.fromkeys(BATCH_CLOSE_REASONS, 0)
        self._sizes = Tally(BATCH_SIZE_BUCKETS)
        self._refused = {"queue_too_long": 0}
        lane.on_free(self._lane_freed_threadsafe)
        lane.room.share("batched", self.held_s)

    @property
    def gathering(self) -> int:
        """Requests held here: in the open batch or in full batches waiting for the lane."""
        return len(self._open) + sum(len(batch) for batch in self._full)

    @property
    def waiting(self) -> int:
        """Still gathering, or handed to the lane and queued behind other work there."""
        return self.gathering + self.on_lane - self.in_flight

    def held_s(self) -> list[float]:
        """Seconds each batch held here will take on the lane, the full ones first (they go first)."""
        batches = [*self._full, self._open] if self._open else list(self._full)
        return [self._lane.clock.estimate_s(len(b), sum(len(w.text) for w in b)) for b in batches]

    def predicted_wait_s(self) -> float:
        """The lane's backlog plus what is held here, at the measured seconds per review."""
        return self._lane.room.after_reviews(self.gathering)

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
                reason="queue_too_long",
                waited_s=0.0,
            )
        loop = self._loop = asyncio.get_running_loop()
        waiter = Waiter(text, loop.create_future())
        if not self._open and self._lane_can_take():
            self._start_timer(loop)
        self._open.append(waiter)
        if len(self._open) >= self._max_size:
            self._cancel_timer()
            self._full.append(self._open)
            self._open = []
        if self._lane_can_take():
            self._hand_over(when_free=False)
        self._publish()
        return await waiter.future

    def _lane_can_take(self) -> bool:
        """Nothing running, nothing queued on the lane: a batch handed over now starts now."""
        return not self._queued_on_lane and not self._lane.busy and self._lane.pending_reviews == 0

    def _start_timer(self, loop: asyncio.AbstractEventLoop) -> None:
        self._cancel_timer()
        self._timer = loop.call_later(self._window_s, self._window_ended)

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _window_ended(self) -> None:
        self._timer = None
        if self._open and self._lane_can_take():
            self._send(self._open, "timer")
            self._open = []
            self._publish()
        # Otherwise the lane took other work meanwhile: the batch goes when the lane frees.

    def _lane_freed_threadsafe(self) -> None:
        """Called on the lane thread; the batches belong to the event loop."""
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        with contextlib.suppress(RuntimeError):  # the loop closed between the check and the call
            loop.call_soon_threadsafe(self._lane_freed)

    def _lane_freed(self) -> None:
        if not self._queued_on_lane:
            self._hand_over(when_free=True)
            self._publish()

    def _hand_over(self, *, when_free: bool) -> None:
        """Send the oldest held batch: a full one, else the open one if the lane freed for it."""
        while self._full:
            if self._send(self._full.popleft(), "full"):
                return
        if self._open and when_free:
            self._cancel_timer()
            batch, self._open = self._open, []
            self._send(batch, "lane_free")

    def _send(self, waiters: list[Waiter], reason: str) -> bool:
        """Hand a batch, less the waiters whose client left, to the lane; False if none were left."""
        batch = [w for w in waiters if not w.future.done()]
        if gone := len(waiters) - len(batch):
            self.skipped_gone += gone
        if not batch:
            return False
        self._closed[reason] = self._closed.get(reason, 0) + 1
        self._sizes.observe(len(batch))
        self._queued_on_lane = True
        task = asyncio.get_running_loop().create_task(self._infer(batch), name=f"batch-{reason}")
        self._running.add(task)
        task.add_done_callback(self._running.discard)
        return True

    async def _infer(self, batch: list[Waiter]) -> None:
        loop = asyncio.get_running_loop()
        started = finished = False

        def begin() -> None:  # on the loop, when the lane starts this batch
            nonlocal started
            self._queued_on_lane = False
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
        failure: Exception | None = None
        try:
            result = await lane_job
        except asyncio.CancelledError:
            if all(w.future.cancelled() for w in batch):
                return
            raise
        except Exception as exc:
            failure = exc
        finally:
            finished = True
            if not started:  # withdrawn or failed before it began: the lane is ours to offer again
                self._queued_on_lane = False
            self.on_lane -= len(batch)
            if started:
                self.in_flight -= len(batch)
            self._publish()
        if failure is not None:
            await self._retry_alone(batch, failure)
            return
        self.last_batch_size = len(batch)
        resolve(batch, result)

    async def _retry_alone(self, batch: list[Waiter], exc: Exception) -> None:
        """A batch failed: score each member alone, so only the text that fails gets an error."""
        if len(batch) == 1:
            fail(batch[0], exc, 1)
            return
        for w in batch:
            if w.future.done():
                continue
            try:
                result = await self._lane.run([w.text])
            except Exception as alone:
                fail(w, alone, 1)
            else:
                resolve([w], result)

    @staticmethod
    def _on_loop(loop: asyncio.AbstractEventLoop, callback: Callable[[], None]) -> None:
        """The lane calls back from its own thread; the counters belong to the event loop."""
        loop.call_soon_threadsafe(callback)

    def _publish(self) -> None:
        """Gauges are read at scrape time (snapshot); the hook where state changes: tickets' ETAs count it."""
        self._lane.room.changed()
