"""Path ②'s seat policy: who sits down, when a refused client is told to come back, and whether its seat is held.

Pure functions of what the gate sees now (`Seats`, every time in seconds from now), over the forecast in
app/paths/seat_plan.py; the gate (limited.py), the holds (holds.py) and the lobby (lobby.py) only apply them.

- **Admit.** A walk-in sits down whenever ② is empty (the lane never idles for a promise), and otherwise
  when a seat is free, no returner waits in the lobby, and seating it makes no returner sit down after its
  due time. It may make one sit down up to `late_s` after it (a second, Retry-After's unit, or a review when
  longer) when it takes lane time that would otherwise go idle: the lane drains before the next returner is
  due, or ② went from empty to busy less than a review ago (a class firing together fills ② as the first
  crowd did).
- **Hint.** A refusal is told its place in line: the first whole second at which a seat is free for it if
  everyone refused before it, held or told, comes back when told and leaves after its review. So a class's
  refusals are spread one seat apart however long the line is, and a later refusal never takes the seat of
  an earlier one (first come, first served).
- **Hold.** That place comes with a Seat-Hold when it is a seat someone admitted now will free, within the
  horizon: a hold never rests on a seat a returner, who may not come, would free, so a class of no-shows or
  a retry loop without its token does not pile holds up. The rest hear only when; their times bind no
  walk-in, but every later refusal is told a place behind them.

Without holds (grace 0) the hint is when the lane reaches the last seated request: nobody is promised anything.
"""

import math
from dataclasses import dataclass

from app.paths.seat_plan import Returner, SeatPlan

__all__ = ["Refusal", "Seats", "admits_walk_in", "refusal", "wait_s"]


@dataclass(frozen=True, slots=True)
class Seats:
    """② as its gate sees it now; every time in seconds from now."""

    capacity: int  # 1 in flight + the waiting seats
    lane_ahead_s: float  # the lane's backlog: ②'s review on the lane and what other paths put before ②'s next
    in_flight: int
    seated_s: tuple[float, ...]  # each seated request's cost, in the order the lane takes them
    held: tuple[Returner, ...] = ()  # live holds not yet due
    told: tuple[Returner, ...] = ()  # Retry-Afters given without a hold, not yet due
    in_lobby: int = 0  # returners waiting for their seat to free
    busy_for_s: float = math.inf  # since ② last went from empty to busy
    per_review_s: float = 1.0
    holds_on: bool = True
    horizon_reviews: float = math.inf  # no hold is promised behind more reviews than this

    @property
    def admitted(self) -> int:
        return self.in_flight + len(self.seated_s)

    def plan(self, *, with_told: bool = False) -> SeatPlan:
        """The forecast: the admitted drain in order, each hold (and, `with_told`, each told time) comes when due."""
        returners = (*self.held, *self.told) if with_told else self.held
        return SeatPlan.of(self.capacity, self.lane_ahead_s, self.in_flight, self.seated_s, returners)


@dataclass(frozen=True, slots=True)
class Refusal:
    """What a refused client hears: come back in `retry_after_s`, with a Seat-Hold for then if `hold`."""

    retry_after_s: float
    hold: bool


def admits_walk_in(seats: Seats, cost_s: float) -> bool:
    """Whether a request without a live hold sits down now (see the module's rules)."""
    if seats.in_lobby:
        return False  # returners in the lobby go first: one of them takes the next seat that frees
    if seats.admitted == 0:
        return True  # work-conserving: an idle lane beats any promise
    if seats.admitted >= seats.capacity:
        return False
    if not seats.holds_on:
        return True
    plan = seats.plan()
    return plan.admits_walk_in(cost_s, slack=_fills_idle_lane(seats, plan))


def refusal(seats: Seats, cost_s: float) -> Refusal:
    """When a refused request of `cost_s` should come back, and whether a seat is held for it then."""
    if not seats.holds_on:
        return Refusal(wait_s(seats), hold=False)
    line = seats.plan(with_told=True)
    held = line.first_hold(max_reviews=seats.horizon_reviews)
    if held is not None:
        return Refusal(held, hold=True)
    return Refusal(line.first_free(cost_s), hold=False)


def wait_s(seats: Seats) -> float:
    """When the lane reaches a newcomer behind every seated request: the hint that promises nothing."""
    return seats.lane_ahead_s + len(seats.seated_s) * seats.per_review_s


def _fills_idle_lane(seats: Seats, plan: SeatPlan) -> bool:
    """The walk-in takes lane time nobody else would use: ② filled up from empty less than a review ago (the
    crowd that found it idle), or the lane drains before the next returner is due."""
    return seats.busy_for_s <= seats.per_review_s or plan.idles_before_next_returner()
