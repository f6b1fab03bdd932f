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

from app.engine.cost import TokenCost
from app.engine.lane import InferenceLane
from app.engine.model import TokenCount, token_counter
from app.errors import BoxFull, InferenceFailed
from app.paths.adaptive_control import Crowd, StandingQueue, VegasLimit, lateness_s, pick
from app.paths.parts import Parts
from app.paths.pipeline import Outcome
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
    (and `SLACK_S` for the predictions' error): the target once the queue stands, the drain bound while it
    drains (Fail at Scale's two timeouts: a light load's chance overlaps are not refused, a standing queue is
    kept short), in reviews at the lane's measured seconds per review so it follows the box. The start counts
    the lane's backlog, the other paths' held work and ⑤'s own queue; its own review's time comes from its
    tokens (what the lane runs), learnt from ⑤'s own inferences. It is refused at once (429 `over_target`)
    when no order of the waiters could keep that promise and every promise already made; an idle lane
    takes anyone. A student's second request in a crowd's first moment is judged only after that moment,
    once classmates' first requests have been (`Crowd`). While the queue drains it is served in order; while it
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
        drain_reviews: float,
        interval_reviews: float,
        tokens: TokenCount | None = None,
        now: Callable[[], float] = time.monotonic,
    ) -> None:
        self._lane = lane
        self._tokens = tokens
        self._crowd = Crowd()
        self._repeats: deque[asyncio.Future[None]] = deque()  # second requests held through a crowd's first moment
        self._settle_timer: asyncio.TimerHandle | None = None
        self._own_cost = TokenCost()  # seconds ≈ a + b·t + c·t², t its tokens, from ⑤'s own inferences
        self._room = lane.room
        self._target_reviews = target_reviews
        self._drain_reviews = drain_reviews
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
        """The latest start a newcomer is promised, from its arrival: the target once the queue stands, the drain
        bound while it drains (never less than the target). On 2026-12-05's host a single bound could not do both:
        1.0 review refused 5 of 45 at half the lane's capacity, 1.5 kept a p95 of 3.4-3.8 reviews under overload."""
        drain = max(self._drain_reviews, self._target_reviews) * self._room.per_review_s
        return self.target_s if standing else drain

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
        """Seconds of work ahead of a newcomer: the lane's backlog, the other paths' held work and all ⑤ holds."""
        return self._lane_ahead_s(len(self._queue) + 1) + sum(w.cost_s for w in self._queue)

    def load(self) -> Load:
        details = {
            "limit": self.limit,
            "standing": int(self.standing),
            "newest_first": self._served_newest_first,
            "late": self._late,
        }
        return Load(self._on_lane, len(self._queue), dict(self._refused), details)

    def retune(
        self,
        *,
        target_reviews: float | None = None,
        drain_reviews: float | None = None,
        interval_reviews: float | None = None,
    ) -> None:
        """An instructor's change, from the next arrival on (promises already made stand)."""
        if target_reviews is not None:
            self._target_reviews = target_reviews
        if drain_reviews is not None:
            self._drain_reviews = drain_reviews
        if interval_reviews is not None:
            self._interval_reviews = interval_reviews

    def visit(self, student: str | None) -> Visit:
        return Visit(self, student)

    def cost_s(self, text: str) -> tuple[int | None, float]:
        """A review's tokens and its predicted seconds on the lane: from its tokens once ⑤'s own inferences
        can tell long from short, from its characters (the lane's shared clock) until then. Longer than any
        review ⑤ has measured, never less than its characters say: a curve fitted on short reviews alone runs
        under a long one's cost (its square is mostly noise there), and a review
        predicted short makes those admitted behind it late, while one predicted long only turns away newcomers
        who could not have started in time anyway (the lane's remainder drops to nothing when it ends)."""
        by_chars = self._room.one(len(text))
        tokens = None if self._tokens is None else self._tokens(text)
        by_tokens = None if tokens is None else self._own_cost.seconds(tokens)
        if tokens is None or by_tokens is None:
            return tokens, by_chars
        return tokens, by_tokens if tokens <= self._own_cost.largest else max(by_tokens, by_chars)

    def learn(self, tokens: int, seconds: float) -> None:
        """One of ⑤'s reviews took `seconds` on the lane: what its tokens cost."""
        self._own_cost.observe(tokens, seconds)

    async def run(self, text: str, student: str | None = None) -> Outcome:
        """Infer one review; the wait runs from this call to the start of its inference."""
        arrived, came = time.monotonic(), self._now()
        tokens, cost_s = self.cost_s(text)
        self._arriving_s += ARRIVING_WEIGHT * (cost_s - self._arriving_s)
        ahead_s = self.ahead_s()
        standing = self._look(ahead_s)  # CoDel sees each arrival once, as it comes
        held = False
        if self._crowd.repeat(student, self._standing.busy_since) and self._young(came):
            await self._after_first_moment()
            held = True
            ahead_s, standing = self.ahead_s(), self.standing
        now = self._now()
        start_by = came + self.bound_s(standing)  # the promise runs from its arrival, a repeat's hold included
        admitted = Admitted(tokens, came, cost_s, start_by, start_by + cost_s + SLACK_S)
        late_s = self._late_s([*self._queue, admitted])
        if late_s > ON_TIME_S and ahead_s > 0:  # an idle lane takes anyone, however long its review
            self._standing.refused(now)
            raise self._refusal(late_s, standing, arrived, held)
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
            result = await self._lane.run([text], expected_s=admitted.cost_s)  # its tokens', not its characters
        except BaseException as exc:  # withdrawn or failed: its place goes on, its time teaches nothing
            self._leave(admitted)
            if isinstance(exc, Exception):
                raise InferenceFailed(f"Inference failed: {exc}") from exc
            raise
        self._done(admitted, result.queued_s + result.infer_s)
        if admitted.tokens is not None:
            self.learn(admitted.tokens, result.infer_s)
        return Outcome(result.ranking(0), result.started_at - arrived, result.infer_s)

    def _look(self, ahead_s: float) -> bool:
        idle = not (self._lane.busy or self._lane.pending_reviews or self._queue or self._going)
        return self._standing.seen(self._now(), ahead_s, idle=idle, target_s=self.target_s, interval_s=self.interval_s)

    def _young(self, now: float) -> bool:
        """In a crowd's first moment: the box went busy less than one target's time ago."""
        return now - self._standing.busy_since < self.target_s

    async def _after_first_moment(self) -> None:
        """Hold a repeat until the crowd's first moment is over (or the lane would idle), then let it be judged:
        classmates' first requests arriving meanwhile are judged first. Holds are let go in arrival order."""
        turn = asyncio.get_running_loop().create_future()
        self._repeats.append(turn)
        if self._settle_timer is None:
            left_s = max(self._standing.busy_since + self.target_s - self._now(), 0.0)
            self._settle_timer = asyncio.get_running_loop().call_later(left_s, self.settle)
        try:
            await turn
        finally:
            if turn in self._repeats:
                self._repeats.remove(turn)

    def settle(self) -> None:
        """The crowd's first moment is over: the repeats held through it go to be judged, in the order they came."""
        if self._settle_timer is not None:
            self._settle_timer.cancel()
            self._settle_timer = None
        while self._repeats:
            turn = self._repeats.popleft()
            if not turn.done():
                turn.set_result(None)

    def _late_s(self, waiting: list[Admitted]) -> float:
        """How late the most-late of `waiting` would start in the best order, behind the lane's backlog, the other
        paths' held work and those let through (0 or less: every promise can be kept)."""
        now = self._now()
        ahead_s = self._lane_ahead_s(len(self._queue) + 1)
        return lateness_s(ahead_s, ((w.cost_s, w.start_by - now) for w in waiting))

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
        self._settle_if_idle()

    def _settle_if_idle(self) -> None:
        """Repeats held while ⑤ has nothing left on the lane or waiting: the lane would idle for nobody."""
        if self._repeats and not self._queue and self._on_lane == 0:
            self.settle()

    def _done(self, admitted: Admitted, on_lane_s: float) -> None:
        """Answered: its time on the lane (its wait there included) teaches the limit; its place goes on."""
        self._on_lane -= 1
        self._late += self._now() > admitted.answer_by
        self._limit.sample(on_lane_s, admitted.cost_s, demand=bool(self._queue))
        self._dispatch()
        self._settle_if_idle()

    def _refusal(self, late_s: float, standing: bool, arrived: float, held: bool) -> BoxFull:
        """At the door (a repeat: once the crowd's first moment is over): `Retry-After` is when a newcomer would
        fit if nothing else arrived."""
        self._refused["over_target"] += 1
        why = ", after classmates' first requests in this crowd" if held else ""
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
        drain_reviews=settings.adaptive_drain_reviews,
        interval_reviews=settings.adaptive_interval_reviews,
        tokens=token_counter(parts.scorer),
    )
