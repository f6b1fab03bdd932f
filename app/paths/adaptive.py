"""Path 5, beyond the handout: admission by measured queueing delay, newest first while the queue stands.

How large services cope (docs/adaptive.md): CoDel for request queues and adaptive LIFO (Facebook,
"Fail at Scale"), and a concurrency limit learnt from latency (Netflix concurrency-limits, Envoy).
"""

import asyncio
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import ClassVar

from app.engine.cost import LengthCost
from app.engine.lane import InferenceLane
from app.engine.model import TokenCount, token_counter
from app.errors import BoxFull, InferenceFailed
from app.paths.adaptive_control import Crowd, StandingQueue, VegasLimit, lateness_s, pick
from app.paths.parts import Parts
from app.paths.pipeline import Outcome
from app.paths.presence import Presence
from app.paths.registry import Load, spec

SPEC = spec("adaptive")
ARRIVING_WEIGHT = 0.2  # how fast "a review of the kind arriving now" follows the arrivals (the clock's own weight)
ON_TIME_S = 0.001  # later than this is late: the clock moves between reading it and reading the lane
SLACK_S = 1.0  # a promise is kept when the answer comes within target + its own review + this (predictions err)


@dataclass(slots=True)
class Visit:
    """One request at ⑤'s door with the student it came from (None: a client without a student key)."""

    gate: "AdaptiveGate"
    student: str | None
    name: ClassVar[str] = SPEC.name
    withdrawable: ClassVar[bool] = True

    async def run(self, text: str) -> Outcome:
        return await self.gate.run(text, self.student)


@dataclass(eq=False, slots=True)
class Admitted:
    """One admitted request in ⑤'s own queue; `turn` resolves when it goes to the lane."""

    tokens: int | None  # its pair's tokens, what the lane runs (None: no tokenizer, as with a test's fake)
    arrived: float  # on the gate's clock
    cost_s: float  # its predicted seconds on the lane
    start_by: float  # on the gate's clock: the latest start that keeps the promise it was admitted with
    answer_by: float  # on the gate's clock: the promise itself (the target, its own review, the slack)
    turn: asyncio.Future[None] = field(default_factory=lambda: asyncio.get_running_loop().create_future())
    sent: bool = False  # gone to the lane: it holds a place under the limit


class AdaptiveGate:
    """Holds ⑤'s requests in its own queue and lets at most `limit` of them onto the shared lane.

    Each newcomer is promised a start within a bound, and so an answer within the bound plus its own review
    (and `SLACK_S` for the predictions' error): the target once the queue stands, twice the target while it
    drains, in reviews at the lane's measured seconds per review so it follows the box. The start counts
    the lane's backlog, the other paths' held work and ⑤'s own queue; its own review's time comes from its
    tokens (what the lane runs), learnt from ⑤'s own inferences. It is refused at once (429 `over_target`)
    when no order of the waiters could keep that promise and every promise already made; an idle lane
    takes anyone. A student's second request in a crowd must also leave a place for each classmate
    present who has not come yet (`Crowd`). While the queue drains it is served in order; while it
    stands (CoDel's verdict, `StandingQueue`), newest first (so those served are still wanted), except
    when serving the newest would break an older waiter's promise: nobody admitted is refused later.
    The limit on the lane follows its latency (`VegasLimit`), so ⑤ keeps the lane busy alone and backs
    off when the other paths fill it.
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
        tokens: TokenCount | None = None,
        presence: Presence | None = None,
        now: Callable[[], float] = time.monotonic,
    ) -> None:
        self._lane = lane
        self._tokens = tokens
        self._presence = presence or Presence(now=now)
        self._crowd = Crowd()
        self._own_cost = LengthCost()  # seconds ≈ a + b × tokens, from ⑤'s own inferences
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
        self._late = 0  # admitted and answered after their promise (should stay 0: the door's predictions err)
        self._arriving_s = self._room.per_review_s  # what the reviews arriving now cost on average, predicted
        lane.room.share(SPEC.name, self.held_s)

    @property
    def target_s(self) -> float:
        return self._target_reviews * self._room.per_review_s

    def bound_s(self, standing: bool) -> float:
        """The latest start a newcomer is promised, from its arrival: the target once the queue stands, twice
        the target while it drains (a light load's chance overlaps are not refused)."""
        return self.target_s if standing else 2 * self.target_s

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
        details = {
            "limit": self.limit,
            "standing": int(self.standing),
            "newest_first": self._served_newest_first,
            "late": self._late,
        }
        return Load(self._on_lane, len(self._queue), dict(self._refused), details)

    def retune(self, *, target_reviews: float | None = None, interval_reviews: float | None = None) -> None:
        """An instructor's change, from the next arrival on (promises already made stand)."""
        if target_reviews is not None:
            self._target_reviews = target_reviews
        if interval_reviews is not None:
            self._interval_reviews = interval_reviews

    def visit(self, student: str | None) -> Visit:
        return Visit(self, student)

    def cost_s(self, text: str) -> tuple[int | None, float]:
        """A review's tokens and its predicted seconds on the lane: from its tokens once ⑤'s own inferences
        can tell long from short, from its characters (the lane's shared clock) until then."""
        tokens = None if self._tokens is None else self._tokens(text)
        fit = self._own_cost.fit
        if tokens is not None and fit is not None:
            return tokens, fit.seconds(1, tokens)
        return tokens, self._room.one(len(text))

    async def run(self, text: str, student: str | None = None) -> Outcome:
        """Infer one review; the wait runs from this call to the start of its inference."""
        arrived, now = time.monotonic(), self._now()
        tokens, cost_s = self.cost_s(text)
        self._arriving_s += ARRIVING_WEIGHT * (cost_s - self._arriving_s)
        ahead_s = self.ahead_s()
        standing = self._look(ahead_s)
        start_by = now + self.bound_s(standing)
        admitted = Admitted(tokens, now, cost_s, start_by, start_by + cost_s + SLACK_S)
        kept = self._crowd.arrive(student, self._standing.busy_since, now - self.interval_s, self._presence.present)
        late_s = self._late_s([*self._queue, admitted, *self._places(kept, start_by)])
        if late_s > ON_TIME_S and ahead_s > 0:  # an idle lane takes anyone, however long its review
            if not kept or self._late_s([*self._queue, admitted]) > ON_TIME_S:  # the load, not a place kept
                self._standing.refused(now)
            raise self._refusal(late_s, standing, arrived, kept)
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
        if admitted.tokens is not None:
            self._own_cost.observe(result.infer_s, 1, admitted.tokens)
        return Outcome(result.ranking(0), result.started_at - arrived, result.infer_s)

    def _look(self, ahead_s: float) -> bool:
        idle = not (self._lane.busy or self._lane.pending_reviews or self._queue or self._going)
        return self._standing.seen(self._now(), ahead_s, idle=idle, target_s=self.target_s, interval_s=self.interval_s)

    def _places(self, kept: int, start_by: float) -> list[tuple[float, float]]:
        """The places kept for classmates not come yet, as waiters: a review of the kind arriving now, each
        promised the same start as the newcomer."""
        return [(self._arriving_s, start_by)] * kept

    def _late_s(self, waiting: list[Admitted | tuple[float, float]]) -> float:
        """How late the most-late of `waiting` (admitted, or (seconds, start by) kept places) would start in
        the best order, behind the lane's backlog, the other paths' held work and those let through (0 or
        less: every promise can be kept)."""
        now = self._now()
        ahead_s = self._lane_ahead_s(len(self._queue) + 1)
        starts = (w if isinstance(w, tuple) else (w.cost_s, w.start_by) for w in waiting)
        return lateness_s(ahead_s, ((cost_s, start_by - now) for cost_s, start_by in starts))

    def _lane_ahead_s(self, turns: int) -> float:
        """Seconds before the lane reaches ⑤'s queue: its backlog, those let through, and what the other paths
        hold back for the lane's next `turns` turns (②'s seated, ③'s gathered: they take turns with ⑤)."""
        going_s = sum(w.cost_s for w in self._going)
        return self._room.after_reviews(0) + going_s + self._room.others_s(turns, but=SPEC.name)

    def _next(self, standing: bool) -> Admitted:
        """Newest first while the queue stands, oldest while it drains, never at the cost of a promise."""
        now = self._now()
        ahead_s = self._lane_ahead_s(len(self._queue))
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
        self._late += self._now() > admitted.answer_by
        self._limit.sample(on_lane_s, admitted.cost_s, demand=bool(self._queue))
        self._dispatch()

    def _refusal(self, late_s: float, standing: bool, arrived: float, kept: int) -> BoxFull:
        """At the door, before any wait: `Retry-After` is when a newcomer would fit if nothing else arrived."""
        self._refused["over_target"] += 1
        why = f", keeping a place for {kept} classmates not come yet" if kept else ""
        order = "newest first" if standing else "in order"
        message = (
            f"⑤'s queue ({order}) could not answer you within its target without making someone admitted late{why}; "
            "come back later."
        )
        return BoxFull(message, late_s, reason="over_target", waited_s=time.monotonic() - arrived)


def build(parts: Parts) -> AdaptiveGate:
    """⑤ from the lab's parts: its bounds in reviews' time, on the lane."""
    settings = parts.settings
    return AdaptiveGate(
        parts.lane,
        target_reviews=settings.adaptive_target_reviews,
        interval_reviews=settings.adaptive_interval_reviews,
        tokens=token_counter(parts.scorer),
        presence=parts.presence,
    )
