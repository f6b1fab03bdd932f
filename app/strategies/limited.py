"""Path 2: one inference in flight, a few waiting seats, and an honest 'come back later'."""

import asyncio
import time
from collections import deque
from dataclasses import dataclass, field
from typing import ClassVar

from app.errors import BoxFull, InferenceFailed, WaitedTooLong, retry_after_header
from app.lane import DeadlinePassed, InferenceLane
from app.paths import Outcome
from app.registry import Load, spec
from app.strategies.holds import HoldCheck, SeatHolds

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
        """Answered without the gate (the cache): a live hold it carried goes back to everyone."""
        if self.token and self.result is None:
            check, hold_id = self.gate.holds.check(self.token)
            if check is HoldCheck.VALID:
                self.gate.holds.drop(hold_id)


class SeatGate:
    """Admits at most 1 + `seats` requests; the rest are refused at once with a hint.

    Without holds, `Retry-After` is the measured time until the last seat-holder ahead starts
    its inference. With holds (app/strategies/holds.py), a refusal is told when the seat kept for
    it will free up (the seats and holds ahead of it, at the measured service time) and gets a
    token for it; held seats count as taken for walk-ins, and a returner with a live token waits
    at the door (at most until its hold expires) for the first seat that frees.
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
        self._door: deque[asyncio.Future[None]] = deque()
        self._admitted = 0
        self._in_flight = 0
        self._refused = {"seats_full": 0, "waited_too_long": 0}
        self._seated_chars: list[int] = []  # of the requests seated, not yet on the lane, in arrival order
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
            more = seats - self._seats
            self._seats = seats
            for _ in range(max(0, more)):
                self._seat_freed()  # a returner waiting at the door may sit down now
        if max_wait_s is not None:
            self._max_wait_s = max_wait_s

    def visit(self, token: str | None) -> Visit:
        return Visit(self, token)

    async def run(self, text: str, visit: Visit | None = None) -> Outcome:
        """Infer one review; the wait runs from this call to the start of its inference."""
        arrived = time.monotonic()
        if not await self._admit(visit):
            raise self._refuse(visit, waited_s=time.monotonic() - arrived)
        deadline = time.monotonic() + self._max_wait_s  # from the seat: a returner's time at the door is its hold's
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
            self._seat_freed()
        return Outcome(result.ranking(0), result.started_at - arrived, result.infer_s)

    async def _admit(self, visit: Visit | None) -> bool:
        """Seat a walk-in if a seat is free and not held, or a live token's bearer at its held seat."""
        if visit is not None and visit.token:
            check, hold_id = self.holds.check(visit.token)
            visit.result = check.value
            if check is HoldCheck.VALID:
                if await self._wait_at_door(hold_id) and self.holds.claim(hold_id):
                    visit.result = "seated"
                    return True
                visit.result = HoldCheck.EXPIRED.value
        return self._admitted + self.holds.live < self.capacity

    async def _wait_at_door(self, hold_id: str) -> bool:
        """Wait (while the hold lives) until a seat is physically free; the hold keeps it from walk-ins."""
        while self._admitted >= self.capacity:
            left = self.holds.expires_in(hold_id)
            if left <= 0:
                return False
            turn = asyncio.get_running_loop().create_future()
            self._door.append(turn)
            try:
                async with asyncio.timeout(left):
                    await turn
            except TimeoutError:
                return False
            except asyncio.CancelledError:
                self.holds.drop(hold_id)
                if turn.done():
                    self._seat_freed()  # pass the wake-up on, or the next one at the door would miss it
                raise
            finally:
                if turn in self._door:
                    self._door.remove(turn)
        return True

    def _seat_freed(self) -> None:
        while self._door:
            turn = self._door.popleft()
            if not turn.done():
                turn.set_result(None)
                return

    def _refuse(self, visit: Visit | None, waited_s: float) -> BoxFull:
        """429 with when to come back; with holds on, a token for the seat kept until then.

        `waited_s` is 0 for a walk-in; a returner may have waited at the door for its held seat.
        """
        self._refused["seats_full"] += 1
        message = f"The box is full: 1 in flight and {self._seats} seats taken. Try again later."
        headers = {"Seat-Hold-Result": visit.result} if visit is not None and visit.result else {}
        if not self.holds.enabled:
            return BoxFull(message, self.retry_after_s(), headers=headers, reason="seats_full", waited_s=waited_s)
        # Seats that must free before one is this client's: the taken ones and the holds ahead, past capacity.
        ahead = max(0, self._admitted + self.holds.live - self.capacity)
        come_back = int(retry_after_header(self._lane.room.after_reviews(ahead)))
        token = self.holds.issue(come_back, ahead)
        if token is None:
            return BoxFull(message, come_back, headers=headers, reason="seats_full", waited_s=waited_s)
        message += (
            f" A seat is held for you: send the Seat-Hold header within {self.holds.grace_s:g} s after Retry-After."
        )
        extra: dict[str, object] = {"hold_token": token, "hold_grace_s": self.holds.grace_s}
        return BoxFull(
            message,
            come_back,
            headers={**headers, "Seat-Hold": token},
            extra=extra,
            reason="seats_full",
            waited_s=waited_s,
        )

    def _waited_too_long(self, arrived: float) -> WaitedTooLong:
        self._refused["waited_too_long"] += 1
        return WaitedTooLong(
            f"Waited more than {self._max_wait_s:g} s for the model; the box is overloaded.",
            self.retry_after_s(),
            reason="waited_too_long",
            waited_s=time.monotonic() - arrived,
        )
