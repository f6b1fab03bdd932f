"""Path 5, beyond the handout: admission by measured queueing delay, newest first while the queue stands.

How large services cope (docs/adaptive.md): CoDel for request queues and adaptive LIFO (Facebook,
"Fail at Scale"), and a concurrency limit learnt from latency (Netflix concurrency-limits, Envoy).
"""

import asyncio
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from app.engine.lane import InferenceLane
from app.errors import BoxFull, InferenceFailed
from app.paths.adaptive_control import StandingQueue, VegasLimit, lateness_s, pick
from app.paths.parts import Parts
from app.paths.pipeline import Outcome
from app.paths.registry import Load, spec

SPEC = spec("adaptive")
ARRIVING_WEIGHT = 0.2  # how fast "a review of the kind arriving now" follows the arrivals (the clock's own weight)


@dataclass(eq=False, slots=True)
class Admitted:
    """One admitted request in ⑤'s own queue; `turn` resolves when it goes to the lane."""

    chars: int
    arrived: float  # on the gate's clock
    cost_s: float  # its predicted seconds on the lane
    start_by: float  # on the gate's clock: the latest start that keeps the promise it was admitted with
    turn: asyncio.Future[None] = field(default_factory=lambda: asyncio.get_running_loop().create_future())
    sent: bool = False  # gone to the lane: it holds a place under the limit


class AdaptiveGate:
    """Holds ⑤'s requests in its own queue and lets at most `limit` of them onto the shared lane.

    Each newcomer is promised a time (`_start_by`), counted in reviews at the lane's measured seconds
    per review so it follows the box, tighter once the queue stands (CoDel's verdict, `StandingQueue`).
    It is refused at once (429 `over_target`) when no order of the waiters could keep that promise and
    every promise already made; an idle lane takes anyone. While the queue drains it is served in order;
    while it stands, newest first (so those served are still wanted), except when serving the newest
    would break an older waiter's promise: nobody admitted is refused later. The limit on the lane
    follows its latency (`VegasLimit`), so ⑤ keeps the lane busy alone and backs off when the other
    paths fill it.
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
        self._queue: deque[Admitted] = deque()  # in arrival order: FIFO takes the left, LIFO the right
        self._going: list[Admitted] = []  # let through, their tasks not yet resumed to hand the review to the lane
        self._on_lane = 0
        self._standing = StandingQueue()
        self._limit = VegasLimit()
        self._refused = {reason: 0 for reason in SPEC.refusals}
        self._served_newest_first = 0
        self._arriving_s = self._room.per_review_s  # what the reviews arriving now cost on average, predicted
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
        return [w.cost_s for w in (*self._going, *order)]

    def ahead_s(self) -> float:
        """Seconds of work ahead of a newcomer: the lane's backlog and all ⑤ holds."""
        return self._room.after_reviews(0) + sum(self.held_s())

    def load(self) -> Load:
        details = {"limit": self.limit, "standing": int(self.standing), "newest_first": self._served_newest_first}
        return Load(self._on_lane, len(self._queue), dict(self._refused), details)

    def retune(self, *, target_reviews: float | None = None, interval_reviews: float | None = None) -> None:
        """An instructor's change, from the next arrival on (promises already made stand)."""
        if target_reviews is not None:
            self._target_reviews = target_reviews
        if interval_reviews is not None:
            self._interval_reviews = interval_reviews

    async def run(self, text: str) -> Outcome:
        """Infer one review; the wait runs from this call to the start of its inference."""
        arrived, now = time.monotonic(), self._now()
        cost_s = self._room.one(len(text))
        self._arriving_s += ARRIVING_WEIGHT * (cost_s - self._arriving_s)
        ahead_s = self.ahead_s()
        standing = self._look(ahead_s)
        admitted = Admitted(len(text), now, cost_s, self._start_by(now, cost_s, standing))
        late_s = self._late_s([*self._queue, admitted])
        if late_s > 0 and ahead_s > 0:  # an idle lane takes anyone, however long its review
            self._standing.refused(now)
            raise self._refusal(late_s, standing, arrived)
        self._queue.append(admitted)
        self._room.changed()
        self._dispatch()
        try:
            await admitted.turn
        except asyncio.CancelledError:
            self._leave(admitted)
            raise
        self._going.remove(admitted)  # no await before the lane's FIFO has it: the backlog counts it from here
        try:
            result = await self._lane.run([text])
        except BaseException as exc:  # withdrawn or failed: its place goes on, its time teaches nothing
            self._leave(admitted)
            if isinstance(exc, Exception):
                raise InferenceFailed(f"Inference failed: {exc}") from exc
            raise
        self._done(admitted, result.queued_s + result.infer_s)
        return Outcome(result.ranking(0), result.started_at - arrived, result.infer_s)

    def _look(self, ahead_s: float) -> bool:
        idle = not (self._lane.busy or self._lane.pending_reviews or self._queue or self._going)
        return self._standing.seen(self._now(), ahead_s, idle=idle, target_s=self.target_s, interval_s=self.interval_s)

    def _start_by(self, now: float, cost_s: float, standing: bool) -> float:
        """The latest start a newcomer is promised. Standing: an answer within the target plus one review (a
        long review must find less ahead of it). Draining: a start within twice the target, or, in a crowd
        that came at once to an idle box, by an interval of the reviews arriving now after it got busy."""
        one_s = self._room.per_review_s
        if standing:
            return now + self.target_s + one_s - cost_s
        if now - self._standing.busy_since <= one_s:  # in a crowd that came at once (before one could be answered)
            return max(now + 2 * self.target_s, self._standing.busy_since + self._interval_reviews * self._arriving_s)
        return now + 2 * self.target_s

    def _late_s(self, waiting: list[Admitted]) -> float:
        """How late the most-late of `waiting` would start in the best order, behind the lane's backlog and
        those let through (0 or less: every promise can be kept)."""
        now = self._now()
        ahead_s = self._room.after_reviews(0) + sum(w.cost_s for w in self._going)
        return lateness_s(ahead_s, ((w.cost_s, w.start_by - now) for w in waiting))

    def _next(self, standing: bool) -> Admitted:
        """Newest first while the queue stands, oldest while it drains, never at the cost of a promise."""
        now = self._now()
        ahead_s = self._room.after_reviews(0) + sum(w.cost_s for w in self._going)
        waiting = [(w.cost_s, w.start_by - now) for w in self._queue]
        return self._queue[pick(waiting, ahead_s, newest=standing)]

    def _dispatch(self) -> None:
        """Send waiters to the lane while the limit allows. A waiter whose client has just gone (its turn
        cancelled, its task not yet back to say so) is passed by."""
        while self._queue and self._on_lane < self.limit:
            standing = self.standing
            admitted = self._next(standing)
            overtakes = admitted is not self._queue[0]
            self._queue.remove(admitted)
            if admitted.turn.done():
                continue
            self._served_newest_first += overtakes
            admitted.sent = True
            self._going.append(admitted)
            self._on_lane += 1
            admitted.turn.set_result(None)
        self._room.changed()

    def _leave(self, admitted: Admitted) -> None:
        """A client gone before or just as its turn came: its place goes to the next, nobody else's is lost."""
        if admitted.sent:
            self._on_lane -= 1
            if admitted in self._going:
                self._going.remove(admitted)
        elif admitted in self._queue:
            self._queue.remove(admitted)
        self._dispatch()

    def _done(self, admitted: Admitted, on_lane_s: float) -> None:
        """Answered: its time on the lane (its wait there included) teaches the limit; its place goes on."""
        self._on_lane -= 1
        self._limit.sample(on_lane_s, admitted.cost_s, demand=bool(self._queue))
        self._dispatch()

    def _refusal(self, late_s: float, standing: bool, arrived: float) -> BoxFull:
        """At the door, before any wait: `Retry-After` is when a newcomer would fit if nothing else arrived."""
        self._refused["over_target"] += 1
        bound = "target" if standing else "interval"
        message = (
            f"⑤'s queue could not answer you within its {bound} without making someone admitted late; come back later."
        )
        return BoxFull(message, late_s, reason="over_target", waited_s=time.monotonic() - arrived)


def build(parts: Parts) -> AdaptiveGate:
    """⑤ from the lab's parts: its bounds in reviews' time, on the lane."""
    settings = parts.settings
    return AdaptiveGate(
        parts.lane, target_reviews=settings.adaptive_target_reviews, interval_reviews=settings.adaptive_interval_reviews
    )
