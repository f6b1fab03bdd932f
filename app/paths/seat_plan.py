"""Path 2's seat forecast: who leaves a seat when, and whether a held seat will really be free at its due time.

A small deterministic model of ②'s box, in seconds from now: the admitted requests drain one after another
(the one on the lane, then the seated in order), and each returner not yet due arrives at its due time, sits
down, and leaves when its own review is done. The policy (app/paths/seat_policy.py) asks it:

- does seating a walk-in now make a returner sit down after its due time (with `slack`: more than `late_s`
  after it)? and does the lane drain before the next returner is due?
- when is a seat free for a hold? Only a seat someone admitted now will free: never one that a returner,
  who may not come, would free after its own review (holds do not stack on holds);
- when is a seat free at all, if every returner comes? A refused client's place in line.
"""

import bisect
import math
from collections.abc import Sequence
from dataclasses import dataclass

EPS = 1e-6  # a seat freed at the very instant a returner is due is free for it


def late_s(returner: "Returner") -> float:
    """How late a walk-in that fills idle lane time may make a returner sit down: a second, Retry-After's unit
    (holds due in the same second arrive together), or its own review when longer (nobody sits before one leaves)."""
    return max(1.0, returner.cost_s)


@dataclass(frozen=True, slots=True)
class Returner:
    """A hold not yet due: its returner arrives `due_s` from now and costs `cost_s` on the lane."""

    due_s: float
    cost_s: float


@dataclass(frozen=True, slots=True)
class SeatPlan:
    """`SeatPlan.of(...)`; then `admits_walk_in(cost, slack=...)`, `first_hold(max_reviews)` and `first_free(cost)`."""

    capacity: int
    leaves_s: tuple[float, ...]  # when each admitted request leaves its seat, in the order the lane takes them
    tail_s: float  # when the lane reaches work that joins the back of ②'s line now
    returners: tuple[Returner, ...]  # sorted by due time

    @classmethod
    def of(
        cls, capacity: int, ahead_s: float, in_flight: int, seated_s: Sequence[float], returners: Sequence[Returner]
    ) -> "SeatPlan":
        """`ahead_s`: the lane's backlog (it includes ②'s request in flight); `seated_s`: each seated one's cost."""
        leaves = [ahead_s] * in_flight
        tail = ahead_s
        for cost in seated_s:
            tail += cost
            leaves.append(tail)
        return cls(capacity, tuple(leaves), tail, tuple(sorted(returners, key=lambda r: r.due_s)))

    def with_walk_in(self, cost_s: float) -> "SeatPlan":
        """The same box with one more request seated now, at the back of the line."""
        tail = self.tail_s + cost_s
        return SeatPlan(self.capacity, (*self.leaves_s, tail), tail, self.returners)

    def keeps_promises(self) -> bool:
        """Every returner finds a free seat at its due time."""
        return all(sit <= r.due_s + EPS for sit, r in zip(self._sits(self.returners), self.returners, strict=True))

    def admits_walk_in(self, cost_s: float, *, slack: bool = False) -> bool:
        """Seating one more now makes no returner sit down later than its due time (`slack`: more than
        `late_s` after it), or, if the lane already runs behind the forecast that promised it, later than
        it would anyway."""
        before = self._sits(self.returners)
        after = self.with_walk_in(cost_s)._sits(self.returners)
        late = late_s if slack else (lambda _: 0.0)
        return all(a <= max(r.due_s + late(r), b) + EPS for a, b, r in zip(after, before, self.returners, strict=True))

    def idles_before_next_returner(self) -> bool:
        """The lane is done with everyone admitted before the next returner is due: it would stand idle between."""
        return all(self.tail_s + EPS < r.due_s for r in self.returners)

    def first_hold(self, max_reviews: float = math.inf) -> int | None:
        """The first whole second from now at which a seat that someone admitted now will have left is free
        and no promise needs it, then or later; None if there is none within `max_reviews` reviews.

        Returners keep the seat they take (a hold never rests on one that may not come), so there are never
        more holds ahead than seats the admitted free, and refusals in a retry loop do not pile them up.
        """
        if self.capacity < 1:
            return None
        dues = [r.due_s for r in self.returners]
        last_leaves = max(self.leaves_s, default=0.0)  # from then on seats only fill up: no later second is free
        for second in range(1, math.ceil(last_leaves - EPS) + 2):
            if sum(1 for end in self.leaves_s if end <= second + EPS) > max_reviews:
                return None
            # A seat at `second` is everyone's who sits by then; each later returner needs its seat too.
            checks = [second, *(due for due in dues if due > second + EPS)]
            if all(self._kept_at(t) < self.capacity for t in checks):
                return second
        return None

    def first_free(self, cost_s: float) -> int:
        """The first whole second from now at which a newcomer finds a seat that no promise needs (and no
        returner sits down later for it), if every returner comes and leaves after its review: a refused
        client's place in line, however far."""
        before, ends = self._forecast(self.returners)
        dues = [r.due_s for r in self.returners]
        second = 1
        while True:  # ends: once everyone has left, a seat is free and every promise came before it
            at = bisect.bisect_right(dues, second + EPS)  # the returners due by then go first
            busy = sum(1 for end in (*self.leaves_s, *ends[:at]) if end > second + EPS)
            if busy < max(self.capacity, 1):  # a seat is free then: does taking it make a later returner sit later?
                sits = self._sits((*self.returners[:at], Returner(float(second), cost_s), *self.returners[at:]))
                later = zip(sits[at + 1 :], before[at:], self.returners[at:], strict=True)
                if all(sit <= max(r.due_s, was) + EPS for sit, was, r in later):
                    return second
            second += 1

    def _kept_at(self, t: float) -> int:
        """Seats taken at `t` if every returner due by then keeps its seat: the admitted not yet gone, and them."""
        return sum(1 for end in self.leaves_s if end > t + EPS) + sum(1 for r in self.returners if r.due_s <= t + EPS)

    def _sits(self, returners: Sequence[Returner]) -> list[float]:
        return self._forecast(returners)[0]

    def _forecast(self, returners: Sequence[Returner]) -> tuple[list[float], list[float]]:
        """When each returner (in due order, as the lobby takes them) sits down and leaves again: a returner
        whose seat is not free at its due time takes the next one that frees."""
        ends = list(self.leaves_s)
        tail = self.tail_s
        sits = []
        for returner in returners:
            later = sorted(end for end in ends if end > returner.due_s + EPS)
            over = len(later) - self.capacity
            sit = returner.due_s if over < 0 else later[over]
            sits.append(sit)
            tail = max(tail, sit) + returner.cost_s
            ends.append(tail)
        return sits, ends[len(self.leaves_s) :]
