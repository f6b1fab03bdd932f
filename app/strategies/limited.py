"""Path 2: one inference in flight, a few waiting seats, and an honest 'come back later'."""

import asyncio
import time

from app.errors import BoxFull, InferenceFailed, WaitedTooLong
from app.lane import DeadlinePassed, InferenceLane
from app.paths import Outcome
from app.registry import Load, spec

SPEC = spec("limited")


class SeatGate:
    """Admits at most 1 + `seats` requests; the rest are refused at once with a hint.

    `Retry-After` is the measured time until the last seat-holder ahead starts its
    inference, i.e. when every seat will be free again, so the hint tracks reality.
    """

    spec = SPEC
    name = SPEC.name
    withdrawable = True

    def __init__(self, lane: InferenceLane, *, seats: int, max_wait_s: float) -> None:
        self._lane = lane
        self._seats = seats
        self._max_wait_s = max_wait_s
        self._slot = asyncio.Semaphore(1)
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
        seats = {"seats_taken": self._admitted, "capacity": self.capacity}
        return Load(self._in_flight, self.waiting, dict(self._refused), seats)

    async def run(self, text: str) -> Outcome:
        """Infer one review; the wait runs from this call to the start of its inference."""
        if self._admitted >= self.capacity:
            self._refused["seats_full"] += 1
            raise BoxFull(
                f"The box is full: 1 in flight and {self._seats} seats taken. Try again later.",
                self.retry_after_s(),
                reason="seats_full",
                waited_s=0.0,
            )
        arrived = time.monotonic()
        deadline = arrived + self._max_wait_s
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
        return Outcome(result.rankings[0], result.started_at - arrived, result.infer_s)

    def _waited_too_long(self, arrived: float) -> WaitedTooLong:
        self._refused["waited_too_long"] += 1
        return WaitedTooLong(
            f"Waited more than {self._max_wait_s:g} s for the model; the box is overloaded.",
            self.retry_after_s(),
            reason="waited_too_long",
            waited_s=time.monotonic() - arrived,
        )
