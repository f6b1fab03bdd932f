"""Path 2: one inference in flight, a few waiting seats, and an honest 'come back later'."""

import asyncio
import math
import time
from dataclasses import dataclass, field
from typing import ClassVar

from app.contract.errors import BoxFull, InferenceFailed, WaitedTooLong
from app.engine.lane import DeadlinePassed, InferenceLane
from app.paths.door import Door
from app.paths.holds import HoldCheck, SeatHolds
from app.paths.pipeline import Outcome
from app.paths.registry import Load, spec
from app.paths.seat_plan import Returner, SeatPlan

SPEC = spec("limited")


@dataclass(slots=True)
class Visit:
    """One request at the gate with the `Seat-Hold` token it presented; `result` says what it got."""

    gate: "SeatGate"
    token: str | None
    result: str | None = field(default=None)  # seated | forged | expired | used (the Seat-Hold-Result)
    name: ClassVar[str] = SPEC.name
    withdrawable: ClassVar[bool] = True

    async def run(self, text: str) -> Outcome:
        return await self.gate.run(text, self)

    def unused(self) -> None:
        """Answered without the gate (the cache): a live hold it carried goes back to everyone (unless
        another bearer of the same token is waiting for it at the door)."""
        if self.token and self.result is None:
            check, hold_id = self.gate.holds.check(self.token)
            if check is HoldCheck.VALID and not self.gate.holds.waited_for(hold_id):
                self.gate.holds.drop(hold_id)


class SeatGate:
    """Admits at most 1 + `seats` requests; the rest are refused at once with a hint.

    Without holds, a walk-in sits down whenever a seat is free, and `Retry-After` is the measured time until
    the last seat-holder ahead starts its inference. With holds (app/paths/holds.py), the gate keeps a
    forecast of its seats (app/paths/seat_plan.py): a walk-in sits down when a seat is free and taking it
    makes no returner sit down after its due time (for the crowd that found ② empty: not more than a
    second, or a review, after it), and whenever ② is empty (the lane never idles for a promise). A refusal
    gets a token for the first seat that someone admitted will free and no promise needs, or, when every
    such seat is promised, only a Retry-After. A returner with a live token waits at the door (at most
    until its hold expires), earliest due first, ahead of walk-ins.
    """

    spec = SPEC
    name = SPEC.name
    withdrawable = True

    def __init__(self, lane: InferenceLane, *, seats: int, max_wait_s: float, holds: SeatHolds | None = None) -> None:
        self._lane = lane
        self._seats = seats
        self._max_wait_s = max_wait_s
        self.holds = holds or SeatHolds(grace_s=0.0, horizon_reviews=0)
        self._slot = asyncio.Semaphore(1)
        self._door = Door()
        self._admitted = 0
        self._in_flight = 0
        self._refused = {"seats_full": 0, "waited_too_long": 0}
        self._seated_chars: list[int] = []  # of the requests seated, not yet on the lane, in arrival order
        self._busy_since: float | None = None  # on the holds' clock: when ② last went from empty to busy
        lane.room.share("limited", self.held_s)

    @property
    def capacity(self) -> int:
        return 1 + self._seats

    @property
    def admitted(self) -> int:
        return self._admitted

    @property
    def in_flight(self) -> int:
        return self._in_flight

    @property
    def waiting(self) -> int:
        return self._admitted - self._in_flight

    @property
    def at_door(self) -> int:
        """Returners waiting for their seat to free."""
        return len(self._door)

    def held_s(self) -> list[float]:
        """Seconds each seated request will take on the lane, in the order the seats are served."""
        return [self._lane.room.one(chars) for chars in self._seated_chars]

    def retry_after_s(self) -> float:
        return self._lane.room.after_reviews(self.waiting)

    def load(self) -> Load:
        seats = {"seats_taken": self._admitted, "capacity": self.capacity, "held": self.holds.live}
        return Load(self._in_flight, self.waiting, dict(self._refused), seats)

    def retune(self, *, seats: int | None = None, max_wait_s: float | None = None) -> None:
        """An instructor's change, from the next arrival on (fewer seats: the seated stay, newcomers wait for room)."""
        if seats is not None:
            self._seats = seats
            self._door.changed()  # a returner waiting at the door may sit down now
        if max_wait_s is not None:
            self._max_wait_s = max_wait_s

    def visit(self, token: str | None) -> Visit:
        return Visit(self, token)

    def plan(self, *, with_told: bool = False) -> SeatPlan:
        """The forecast now: the admitted draining in order, each hold not yet due arriving at its due time
        (and, `with_told`, each refusal told a time without a hold, as if it comes then)."""
        room, now = self._lane.room, self.holds.now()  # the holds' clock: due times and "now" are one time
        ahead = self.holds.ahead() + (self.holds.told() if with_told else [])
        returners = [Returner(hold.due - now, room.one(hold.chars)) for hold in ahead]
        seated = [room.one(chars) for chars in self._seated_chars]
        return SeatPlan.of(self.capacity, room.after_reviews(0), self._in_flight, seated, returners)

    async def run(self, text: str, visit: Visit | None = None) -> Outcome:
        """Infer one review; the wait runs from this call to the start of its inference."""
        arrived = time.monotonic()
        if not await self._admit(visit, len(text)):
            raise self._refuse(visit, time.monotonic() - arrived, len(text))
        deadline = time.monotonic() + self._max_wait_s  # from the seat: a returner's time at the door is its hold's
        if self._admitted == 0:
            self._busy_since = self.holds.now()
        self._admitted += 1
        self._seated_chars.append(len(text))
        self._lane.room.changed()
        try:
            try:
                async with asyncio.timeout(self._max_wait_s):
                    await self._slot.acquire()
            except TimeoutError:
                raise self._waited_too_long(arrived) from None
            finally:
                self._seated_chars.remove(len(text))
                self._lane.room.changed()
            self._in_flight += 1
            try:
                result = await self._lane.run([text], deadline=deadline)
            except DeadlinePassed:
                raise self._waited_too_long(arrived) from None
            except Exception as exc:
                raise InferenceFailed(f"Inference failed: {exc}") from exc
            finally:
                self._in_flight -= 1
                self._slot.release()
        finally:
            self._admitted -= 1
            self._door.changed()  # a seat freed: the first returner at the door takes it
        return Outcome(result.ranking(0), result.started_at - arrived, result.infer_s)

    async def _admit(self, visit: Visit | None, chars: int) -> bool:
        """A live token's bearer (one per hold) goes to the door; everyone else is judged as a walk-in."""
        if visit is not None and visit.token:
            check, hold_id = self.holds.check(visit.token)
            if check is HoldCheck.VALID:
                check = self.holds.arrive(hold_id)  # a copy while its bearer waits: `used`
            visit.result = check.value
            if check is HoldCheck.VALID:
                if await self._returner_seated(hold_id):
                    visit.result = "seated"
                    return True
                visit.result = HoldCheck.EXPIRED.value
        return self._walk_in_fits(chars)

    async def _returner_seated(self, hold_id: str) -> bool:
        """Wait at the door, earliest due first, while the hold lives; claim the seat when it is this one's."""
        holds = self.holds
        try:
            seated = await self._door.wait(
                holds.due_at(hold_id),
                free=lambda: self.capacity - self._admitted,
                may_stay=lambda: holds.expires_in(hold_id) > 0,
                limit_s=holds.expires_in(hold_id),
            )
        except asyncio.CancelledError:
            holds.drop(hold_id)
            raise
        if seated and holds.claim(hold_id):
            return True
        holds.give_up(hold_id)  # came, but its grace window ended at the door: counted `expired`
        return False

    def _walk_in_fits(self, chars: int) -> bool:
        """A free seat that no returner at the door or due later needs; always when ② is empty."""
        if self._door:
            return False
        if self._admitted == 0:
            return True  # work-conserving: an idle lane beats the forecast (a returner then waits at most a review)
        if self._admitted >= self.capacity:
            return False
        return self.plan().admits_walk_in(self._lane.room.one(chars), crowd=self._crowd_at_an_idle_box())

    def _crowd_at_an_idle_box(self) -> bool:
        """② went from empty to busy less than a review ago: this walk-in came with the crowd that found it empty
        (a class firing together), which fills ② as the first crowd did (a returner due soon may be late)."""
        since = self._busy_since
        return since is not None and self.holds.now() - since <= self._lane.room.per_review_s

    def _refuse(self, visit: Visit | None, waited_s: float, chars: int) -> BoxFull:
        """429 with when to come back; with holds on, a token for a seat the forecast sees free then.

        `waited_s` is 0 for a walk-in; a returner may have waited at the door for its held seat.
        """
        self._refused["seats_full"] += 1
        free = self.capacity - self._admitted
        message = (
            f"The box is full: 1 in flight and {self._seats} seats taken. Try again later."
            if free <= 0
            else f"The box is full: its {free} free seat(s) are promised to returners due sooner. Try again later."
        )
        headers = {"Seat-Hold-Result": visit.result} if visit is not None and visit.result else {}
        if not self.holds.enabled:
            return BoxFull(message, self.retry_after_s(), headers=headers, reason="seats_full", waited_s=waited_s)
        plan, cost = self.plan(), self._lane.room.one(chars)
        come_back = plan.first_hold(max_reviews=self.holds.horizon_reviews)
        token = None if come_back is None else self.holds.issue(come_back, chars)
        if token is None:  # every seat the admitted free is promised (or past the horizon): only when one is free
            hint = come_back or self._told_when(cost, chars) or plan.first_free(cost) or math.ceil(self.retry_after_s())
            return BoxFull(message, hint, headers=headers, reason="seats_full", waited_s=waited_s)
        message += (
            f" A seat is held for you: send the Seat-Hold header within {self.holds.grace_s:g} s after Retry-After."
        )
        extra: dict[str, object] = {"hold_token": token, "hold_grace_s": self.holds.grace_s}
        headers["Seat-Hold"] = token
        return BoxFull(message, come_back, headers=headers, extra=extra, reason="seats_full", waited_s=waited_s)

    def _told_when(self, cost_s: float, chars: int) -> int | None:
        """A Retry-After without a hold, one seat past those told before (within the horizon)."""
        told = self.plan(with_told=True).first_free(cost_s, max_reviews=self.holds.horizon_reviews)
        if told is not None:
            self.holds.tell(told, chars)
        return told

    def _waited_too_long(self, arrived: float) -> WaitedTooLong:
        self._refused["waited_too_long"] += 1
        return WaitedTooLong(
            f"Waited more than {self._max_wait_s:g} s for the model; the box is overloaded.",
            self.retry_after_s(),
            reason="waited_too_long",
            waited_s=time.monotonic() - arrived,
        )
