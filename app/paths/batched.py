"""Path 3: one loop owns the queue and pulls the next batch when the lane can take it."""

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import Callable

from app.engine.lane import InferenceLane
from app.engine.tally import BATCH_SIZE_BUCKETS, Tally
from app.errors import BoxFull
from app.paths.batch import BATCH_CLOSE_REASONS, BatcherSnapshot
from app.paths.handover import Handover, Waiter, fail, resolve, retry_alone
from app.paths.parts import Parts
from app.paths.pipeline import Outcome
from app.paths.registry import Load, spec

SPEC = spec("batched")


class MicroBatcher:
    """Handlers append to the queue and await their future; one task, `_serve`, does everything else.

    The loop, like text-embeddings-inference's batching task or Ray Serve's `_BatchQueue`:

    - wait for a first request;
    - if it found the loop waiting and the lane idle, hold it up to `window_s` for company, or until
      `max_size` are waiting (`timer`, `full`); requests that arrive while the lane is busy, our own
      last batch included, get no window;
    - take a turn on the lane (`InferenceLane.turn`) and hand the oldest waiters over to it
      (a `Handover`, up to `max_size`), and every newcomer after them, until the lane reaches the
      turn and takes whoever was handed over: so a batch is formed when the model can take it and
      never queues behind other work while it could still grow, and the lane never waits for this
      loop. A batch that waited for the lane goes as `lane_free`, or `full` if it filled up meanwhile;
    - answer each member as the lane scores it (the `Handover` decides who goes out when), and go
      round again once the batch is done. At most one batch of ours is on the lane.

    Why a batch goes is decided from what this loop waited for (its own queue when it came round,
    its window, whether its turn waited behind other work), never from the lane's busy flag read
    while our own batch is being handed over: that flag lags the lane thread, so a request that
    came just after a `full` batch would be labelled `timer` though it waited for that batch.

    A waiter whose client left before its batch was taken is left out (and counted). If a batch
    fails, each member is retried alone, so one text the model cannot score fails only its own request.

    With `max_wait_s` > 0, a newcomer whose predicted wait is longer is refused at once
    (429 + Retry-After) instead of joining a queue that only grows; 0 admits everyone.
    """

    spec = SPEC
    name = SPEC.name
    withdrawable = True

    def __init__(self, lane: InferenceLane, *, window_s: float, max_size: int, max_wait_s: float = 0.0) -> None:
        self._lane = lane
        self._window_s = window_s
        self._max_size = max_size
        self._max_wait_s = max_wait_s
        self._queue: deque[Waiter] = deque()
        self._arrived = asyncio.Event()  # set by run() when a request arrives, cleared by the loop
        self._task: asyncio.Task[None] | None = None
        self._handover: Handover | None = None  # this round's batch, on its way to the lane or on it
        self.last_batch_size = 0
        self.skipped_gone = 0
        self._numbered = 0  # batches handed to the lane: each answer says which one it rode (X-Batch-Id)
        self._closed = dict.fromkeys(BATCH_CLOSE_REASONS, 0)
        self._sizes = Tally(BATCH_SIZE_BUCKETS)
        self._refused = {"queue_too_long": 0}
        # The first batch of the queue waits in the lane's FIFO as a turn, which the backlog does not cost.
        lane.room.share(self.name, self.held_s, in_fifo=1)

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._serve(), name="batcher")

    async def stop(self) -> None:
        """Stop the loop; whoever is still queued or in the batch on the lane gets an error."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        while self._queue:
            fail(self._queue.popleft(), RuntimeError("the lab is stopping"), 1)

    @property
    def alive(self) -> bool:
        """The loop is running (/health says unhealthy if it ever stops while the lab serves)."""
        return self._task is not None and not self._task.done()

    def retune(
        self, *, window_s: float | None = None, max_size: int | None = None, max_wait_s: float | None = None
    ) -> None:
        """An instructor's change, for the next batch opened (one already open keeps its timer)."""
        if window_s is not None:
            self._window_s = window_s
        if max_size is not None:
            self._max_size = max_size
        if max_wait_s is not None:
            self._max_wait_s = max_wait_s

    @property
    def gathering(self) -> int:
        """Requests here that the lane has not taken yet: handed over for our turn, or queued behind."""
        return len(self._held())

    @property
    def in_flight(self) -> int:
        """Reviews of the batch the lane has taken that have not been answered yet."""
        return 0 if self._handover is None else self._handover.in_flight()

    def _held(self) -> list[Waiter]:
        return ([] if self._handover is None else self._handover.waiting()) + list(self._queue)

    @property
    def waiting(self) -> int:
        return self.gathering

    def held_s(self) -> list[float]:
        """Seconds each batch the queue will make takes on the lane, oldest first (tickets' ETAs count them)."""
        queued = self._held()
        chunks = [queued[i : i + self._max_size] for i in range(0, len(queued), self._max_size)]
        return [self._lane.clock.estimate_s(len(c), sum(len(w.text) for w in c)) for c in chunks]

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

    def load(self) -> Load:
        details = {"last_batch": self.last_batch_size, "skipped_gone": self.skipped_gone}
        return Load(self.in_flight, self.waiting, dict(self._refused), details)

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
        waiter = Waiter(text)
        self._queue.append(waiter)
        self._arrived.set()
        self._feed_open()  # into the batch on its way to the lane, if it has room
        self._lane.room.changed()
        try:
            return await waiter.future
        except asyncio.CancelledError:  # the client left: if its batch is not taken yet, its place goes to the next
            self._feed_open()
            raise

    async def _serve(self) -> None:
        turns = 0
        while True:
            # Waiters already queued when we come round came while our last turn was on the lane: they waited for it.
            came_while_busy = turns > 0 and bool(self._queue)
            await self._until(lambda: bool(self._queue))
            reason = "lane_free"
            if not came_while_busy and self._lane_idle():  # the first found us and the lane idle: gather
                window_ends = self._queue[0].arrived + self._window_s
                filled = await self._until(lambda: len(self._queue) >= self._max_size, window_ends)
                reason = "full" if filled else "timer"
            turns += 1
            handover = self._handover = Handover(self._max_size, self._numbered + 1)
            try:
                await self._hand_over(handover, reason)
            except asyncio.CancelledError:
                for w in handover.withdraw():
                    fail(w, RuntimeError("the lab is stopping"), len(handover.batch))
                raise

    async def _until(self, ready: Callable[[], bool], deadline: float | None = None) -> bool:
        """Wait on arrivals and the handover's news until `ready()`; False if the monotonic `deadline` passed first."""
        try:
            async with asyncio.timeout(None if deadline is None else max(deadline - time.monotonic(), 0.0)):
                while not ready():
                    self._arrived.clear()
                    await self._arrived.wait()
        except TimeoutError:
            return False
        return True

    def _lane_idle(self) -> bool:
        """Nobody else's work on the lane or ahead of us (ours is not: the loop is not inferring when it asks)."""
        return not self._lane.busy and self._lane.pending_reviews == 0

    def _feed_open(self) -> None:
        """Hand the oldest waiters over to the batch on its way to the lane while it has room, dropping (and
        counting) those whose client left; nothing once the lane has taken it."""
        handover = self._handover
        while handover is not None and self._queue and not handover.seen:
            waiter = self._queue[0]
            if waiter.future.done():
                self._queue.popleft()
                self.skipped_gone += 1
            elif handover.offer(waiter):
                self._queue.popleft()
            else:
                break

    async def _hand_over(self, handover: Handover, reason: str) -> None:
        """Feed our turn until the lane takes it, then see the batch through: one batch of ours at a time."""
        self._feed_open()
        self._lane.turn(handover)
        await handover.taken.wait()  # meanwhile each arrival, and each place a leaver frees, is fed in run()
        batch = handover.batch
        self.skipped_gone += handover.left_out
        self._lane.room.changed()
        if not batch:  # everyone left: the lane moved on
            return
        self._numbered = handover.number
        if reason == "timer" and handover.waited:  # the window ended, then other work held the lane
            reason = "lane_free"
        self._closed["full" if len(batch) == handover.max_size else reason] += 1
        self._sizes.observe(len(batch))
        try:
            done = await handover.finished
        except Exception as exc:
            await retry_alone(self._lane, batch, exc)
            return
        self.last_batch_size = len(batch)
        resolve(batch, done, handover.number)


def build(parts: Parts) -> MicroBatcher:
    """③ from the lab's parts; the lab starts its gathering loop (`start`) and stops it (`stop`)."""
    s = parts.settings
    return MicroBatcher(parts.lane, window_s=s.batch_window_s, max_size=s.batch_max, max_wait_s=s.batch_max_wait_s)
