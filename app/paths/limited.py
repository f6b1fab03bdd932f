"""Path 2: one inference in flight, a few waiting seats, and an honest 'come back later'."""

import asyncio
import math
import time
from dataclasses import dataclass, field
from typing import ClassVar

from app.engine.lane import DeadlinePassed, InferenceLane
from app.errors import BoxFull, InferenceFailed, WaitedTooLong
from app.paths.holds import Hold, HoldCheck, SeatHolds
from app.paths.lobby import Lobby
from app.paths.parts import Parts
from app.paths.pipeline import Outcome
from app.paths.registry import Load, spec
from app.paths.seat_plan import Returner
from app.paths.seat_policy import Seats, admits_walk_in, refusal, wait_s

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
        another bearer of the same token is waiting for it in the lobby)."""
        if self.token and self.result is None:
            check, hold_id = self.gate.holds.check(self.token)
            if check is HoldCheck.VALID and not self.gate.holds.waited_for(hold_id):
                self.gate.holds.drop(hold_id)


class SeatGate:
    """Admits at most 1 + `seats` requests; the rest are refused at once with a hint.

    The mechanism only: it counts who is seated and in flight, keeps the holds (app/paths/holds.py) and the
    lobby where a returner with a live token waits for its seat (app/paths/lobby.py), and asks the seat policy
    (app/paths/seat_policy.py) who sits down, when a refused client should come back and whether its seat is
    held then, handing it what it sees now (`seats()`).
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
        self._lobby = Lobby()
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
    def in_lobby(self) -> int:
        """Returners waiting for their seat to free."""
        return len(self._lobby)

    def held_s(self) -> list[float]:
        """Seconds each seated request will take on the lane, in the order the seats are served."""
        return [self._lane.room.one(chars) for chars in self._seated_chars]

    def retry_after_s(self) -> float:
        return wait_s(self.seats())

    def load(self) -> Load:
        seats = {"seats_taken": self._admitted, "capacity": self.capacity, "held": self.holds.live}
        return Load(self._in_flight, self.waiting, dict(self._refused), seats)

    def retune(self, *, seats: int | None = None, max_wait_s: float | None = None) -> None:
        """An instructor's change, from the next arrival on (fewer seats: the seated stay, newcomers wait for room)."""
        if seats is not None:
            self._seats = seats
            self._lobby.changed()  # a returner waiting in the lobby may sit down now
        if max_wait_s is not None:
            self._max_wait_s = max_wait_s

    def visit(self, token: str | None) -> Visit:
        return Visit(self, token)

    def seats(self) -> Seats:
        """② now, as the policy sees it: every time in seconds from now, on the holds' clock (due times are on it)."""
        room, now = self._lane.room, self.holds.now()

        def returners(holds: list[Hold]) -> tuple[Returner, ...]:
            return tuple(Returner(hold.due - now, room.one(hold.chars)) for hold in holds)

        return Seats(
            capacity=self.capacity,
            lane_ahead_s=room.after_reviews(0),
            in_flight=self._in_flight,
            seated_s=tuple(self.held_s()),
            held=returners(self.holds.ahead()),
            told=returners(self.holds.told()),
            in_lobby=len(self._lobby),
            busy_for_s=math.inf if self._busy_since is None else now - self._busy_since,
            per_review_s=room.per_review_s,
            holds_on=self.holds.enabled,
            horizon_reviews=self.holds.horizon_reviews,
        )

    async def run(self, text: str, visit: Visit | None = None) -> Outcome:
        """Infer one review; the wait runs from this call to the start of its inference."""
        arrived = time.monotonic()
        if not await self._admit(visit, len(text)):
            raise self._refuse(visit, time.monotonic() - arrived, len(text))
        deadline = time.monotonic() + self._max_wait_s  # from the seat: a returner's time in the lobby is its hold's
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
            self._lobby.changed()  # a seat freed: the first returner in the lobby takes it
        return Outcome(result.ranking(0), result.started_at - arrived, result.infer_s)

    async def _admit(self, visit: Visit | None, chars: int) -> bool:
        """A live token's bearer (one per hold) goes to the lobby; everyone else is judged as a walk-in."""
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
        return admits_walk_in(self.seats(), self._lane.room.one(chars))

    async def _returner_seated(self, hold_id: str) -> bool:
        """Wait in the lobby, earliest due first, while the hold lives; claim the seat when it is this one's."""
        holds = self.holds
        try:
            seated = await self._lobby.wait(
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
        holds.give_up(hold_id)  # came, but its grace window ended in the lobby: counted `expired`
        return False

    def _refuse(self, visit: Visit | None, waited_s: float, chars: int) -> BoxFull:
        """429 with when to come back and, when the policy holds the seat then, a token for it.

        `waited_s` is 0 for a walk-in; a returner may have waited in the lobby for its held seat.
        """
        self._refused["seats_full"] += 1
        free = self.capacity - self._admitted
        message = (
            f"The box is full: 1 in flight and {self._seats} seats taken. Try again later."
            if free <= 0
            else f"The box is full: its {free} free seat(s) are promised to returners due sooner. Try again later."
        )
        headers = {"Seat-Hold-Result": visit.result} if visit is not None and visit.result else {}
        told = refusal(self.seats(), self._lane.room.one(chars))
        token = self.holds.issue(math.ceil(told.retry_after_s), chars) if told.hold else None
        if token is None:
            if self.holds.enabled:  # remembered until due: the next refusal is told a place behind it
                self.holds.tell(math.ceil(told.retry_after_s), chars)
            return BoxFull(message, told.retry_after_s, headers=headers, reason="seats_full", waited_s=waited_s)
        message += (
            f" A seat is held for you: send the Seat-Hold header within {self.holds.grace_s:g} s after Retry-After."
        )
        extra: dict[str, object] = {"hold_token": token, "hold_grace_s": self.holds.grace_s}
        headers["Seat-Hold"] = token
        return BoxFull(
            message, told.retry_after_s, headers=headers, extra=extra, reason="seats_full", waited_s=waited_s
        )

    def _waited_too_long(self, arrived: float) -> WaitedTooLong:
        self._refused["waited_too_long"] += 1
        return WaitedTooLong(
            f"Waited more than {self._max_wait_s:g} s for the model; the box is overloaded.",
            self.retry_after_s(),
            reason="waited_too_long",
            waited_s=time.monotonic() - arrived,
        )


def build(parts: Parts) -> SeatGate:
    """② from the lab's parts: its seats and wait bound, and the held seats it promises, on the lane."""
    settings = parts.settings
    holds = SeatHolds(grace_s=settings.limited_hold_grace_s, horizon_reviews=settings.limited_hold_horizon_reviews)
    return SeatGate(parts.lane, seats=settings.limited_seats, max_wait_s=settings.limited_max_wait_s, holds=holds)
