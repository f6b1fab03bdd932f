"""Path 5, beyond the handout: admission by measured queueing delay, newest first while the queue stands.

How large services cope (docs/adaptive.md): CoDel for request queues and adaptive LIFO (Facebook,
"Fail at Scale"), and a concurrency limit learnt from latency (Netflix concurrency-limits, Envoy).
"""

import asyncio
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from app.contract.errors import BoxFull, InferenceFailed
from app.engine.lane import InferenceLane
from app.paths.adaptive_control import StandingQueue, VegasLimit
from app.paths.pipeline import Outcome
from app.paths.registry import Load, spec

SPEC = spec("adaptive")


@dataclass(eq=False, slots=True)
class Waiter:
    """One admitted request in ⑤'s own queue; `turn` resolves when it goes to the lane (or is refused)."""

    chars: int
    arrived: float  # on the gate's clock
    turn: asyncio.Future[None] = field(default_factory=lambda: asyncio.get_running_loop().create_future())
    sent: bool = False  # gone to the lane: it holds a place under the limit


class AdaptiveGate:
    """Holds ⑤'s requests in its own queue and lets at most `limit` of them onto the shared lane.

    A newcomer is refused at once (429 `over_target`) when the work ahead of it would take longer than
    the bound: the interval while the queue drains (a burst may queue that long), the target while it
    stands (CoDel's verdict, `StandingQueue`). Both are counted in reviews at the lane's measured seconds
    per review, so they follow the box. While the queue drains it is served in order; while it stands,
    newest first, so those served are still wanted; a waiter passed over for longer than the interval
    is refused then (429 `past_interval`, oldest first). The limit on the lane follows its latency
    (`VegasLimit`), so ⑤ keeps the lane busy alone and backs off when the other paths fill it.
    """

    spec = SPEC
    name = SPEC.name
    withdrawable = True

    def __init__(
        self,
        lane: InferenceLane,
        *,
        target_reviews: float,
        interval_reviews: float,
        now: Callable[[], float] = time.monotonic,
    ) -> None:
        self._lane = lane
        self._room = lane.room
        self._target_reviews = target_reviews
        self._interval_reviews = interval_reviews
        self._now = now
        self._queue: deque[Waiter] = deque()  # in arrival order: FIFO takes the left, LIFO the right
        self._going: list[Waiter] = []  # let through, their tasks not yet resumed to hand the review to the lane
        self._on_lane = 0
        self._standing = StandingQueue()
        self._limit = VegasLimit()
        self._refused = {reason: 0 for reason in SPEC.refusals}
        self._served_newest_first = 0
        lane.room.share(SPEC.name, self.held_s)

    @property
    def target_s(self) -> float:
        return self._target_reviews * self._room.per_review_s

    @property
    def interval_s(self) -> float:
        """Never shorter than the target: a queue cannot stand for less than it may wait."""
        return max(self._interval_reviews, self._target_reviews) * self._room.per_review_s

    @property
    def standing(self) -> bool:
        return self._standing.standing

    @property
    def limit(self) -> int:
        return self._limit.limit

    def held_s(self) -> list[float]:
        """Seconds each of ⑤'s reviews not yet in the lane's FIFO will take there, in the order they go: those
        let through whose task has not reached the lane yet, then the queue as it would be served now."""
        order = reversed(self._queue) if self.standing else iter(self._queue)
        return [self._room.one(w.chars) for w in (*self._going, *order)]

    def ahead_s(self) -> float:
        """Seconds of work ahead of a newcomer: the lane's backlog and all ⑤ holds (newest first or not,
        admitting it must not keep the last one waiting past the bound)."""
        return self._room.after_reviews(0) + sum(self.held_s())

    def load(self) -> Load:
        details = {"limit": self.limit, "standing": int(self.standing), "newest_first": self._served_newest_first}
        return Load(self._on_lane, len(self._queue), dict(self._refused), details)

    def retune(self, *, target_reviews: float | None = None, interval_reviews: float | None = None) -> None:
        """An instructor's change, from the next arrival on."""
        if target_reviews is not None:
            self._target_reviews = target_reviews
        if interval_reviews is not None:
            self._interval_reviews = interval_reviews

    async def run(self, text: str) -> Outcome:
        """Infer one review; the wait runs from this call to the start of its inference."""
        arrived, arrived_at = time.monotonic(), self._now()
        self._look()
        ahead_s = self.ahead_s()
        bound_s = self.target_s if self.standing else self.interval_s
        if ahead_s > bound_s:
            self._standing.refused(arrived_at)
            raise self._refusal("over_target", ahead_s - bound_s + self._room.per_review_s, arrived)
        waiter = Waiter(len(text), arrived_at)
        self._queue.append(waiter)
        self._room.changed()
        self._dispatch()
        try:
            await waiter.turn
        except asyncio.CancelledError:
            self._leave(waiter)
            raise
        except BoxFull as refused:
            refused.waited_s = time.monotonic() - arrived
            raise
        self._going.remove(waiter)  # no await before the lane's FIFO has it: the backlog counts it from here
        try:
            result = await self._lane.run([text])
        except BaseException as exc:  # withdrawn or failed: its place goes on, its time teaches nothing
            self._leave(waiter)
            if isinstance(exc, Exception):
                raise InferenceFailed(f"Inference failed: {exc}") from exc
            raise
        self._done(waiter, result.queued_s + result.infer_s)
        return Outcome(result.ranking(0), result.started_at - arrived, result.infer_s)

    def _look(self) -> bool:
        oldest = self._now() - self._queue[0].arrived if self._queue else None
        return self._standing.seen(self._now(), oldest, target_s=self.target_s, interval_s=self.interval_s)

    def _dispatch(self) -> None:
        """Send waiters to the lane while the limit allows: in order while draining, newest first while standing.

        A waiter whose client has just gone (its turn cancelled, its task not yet back to say so) is passed by.
        """
        while self._queue and self._on_lane < self.limit:
            standing = self._look()
            self._drop_passed_over()
            if not self._queue:
                break
            waiter = self._queue.pop() if standing else self._queue.popleft()
            if waiter.turn.done():
                continue
            self._served_newest_first += standing
            waiter.sent = True
            self._going.append(waiter)
            self._on_lane += 1
            waiter.turn.set_result(None)
        self._room.changed()

    def _drop_passed_over(self) -> None:
        """Waiters passed over by newer ones for longer than the interval while the queue stood: refused, oldest
        first (while it drains nobody is passed over, and each was admitted to wait at most the interval)."""
        while (
            self.standing
            and self._queue
            and self._now() - max(self._queue[0].arrived, self._standing.since) > self.interval_s
        ):
            passed = self._queue.popleft()
            if not passed.turn.done():
                passed.turn.set_exception(self._refusal("past_interval", self.ahead_s()))

    def _leave(self, waiter: Waiter) -> None:
        """A client gone before or just as its turn came: its place goes to the next, nobody else's is lost."""
        if waiter.sent:
            self._on_lane -= 1
            if waiter in self._going:
                self._going.remove(waiter)
        elif waiter in self._queue:
            self._queue.remove(waiter)
        elif waiter.turn.done() and not waiter.turn.cancelled():
            waiter.turn.exception()  # refused just as its client left: nobody reads it
        self._dispatch()

    def _done(self, waiter: Waiter, on_lane_s: float) -> None:
        """Answered: its time on the lane (its wait there included) teaches the limit; its place goes on."""
        self._on_lane -= 1
        self._limit.sample(on_lane_s, self._room.one(waiter.chars), demand=bool(self._queue))
        self._dispatch()

    def _refusal(self, reason: str, retry_after_s: float, arrived: float | None = None) -> BoxFull:
        self._refused[reason] += 1
        message = (
            f"⑤'s queue would keep you past its {'target' if self.standing else 'interval'}; come back later."
            if reason == "over_target"
            else "Newer requests went first while the queue stood; you waited past the interval."
        )
        waited = None if arrived is None else time.monotonic() - arrived
        return BoxFull(message, retry_after_s, reason=reason, waited_s=waited)
