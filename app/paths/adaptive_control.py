"""⑤'s controllers, pure and clock-free: CoDel's "is the queue standing?", a Vegas-like concurrency limit,
and the promise check that keeps newest-first from making anyone late.

Each takes the time as an argument, so tests drive them with a fake clock; app/paths/adaptive.py
owns the queue and asks them (docs/adaptive.md says where they depart from their sources).
"""

from collections.abc import Iterable
from dataclasses import dataclass


class StandingQueue:
    """CoDel (Nichols & Jacobson, ACM Queue 2012) asked of a request queue: has the queue stood?

    It turns standing when, for a whole interval, the minimum sojourn stayed above the target: the
    queue never emptied and its oldest waiter (the next to leave while it drains in order) was always
    older than the target; or at once when a newcomer is refused at the door (the work ahead of it
    outlasts the interval, so the queue will stand that long: waiting to measure it would admit a second
    interval's worth first). It turns back once a whole interval passes with its queue empty and no
    newcomer finding more than the target ahead (Facebook's "the queue has been empty within the
    interval", Fail at Scale, ACM Queue 2015): while it stands, newest first keeps the served sojourns
    short, so CoDel's own exit (a sojourn under target) would let it go at once and the interval's
    bound would let the queue build again.
    """

    def __init__(self) -> None:
        self.standing = False
        self.since = 0.0  # when it last turned standing
        self._within_target_at: float | None = None  # the last moment the minimum sojourn was within target
        self._crowded_at: float | None = None  # the last newcomer that found more than the target ahead

    def seen(self, now: float, oldest_s: float | None, *, target_s: float, interval_s: float) -> bool:
        """Called at every arrival and departure with the oldest waiter's age (None: nobody waits)."""
        if self._within_target_at is None or oldest_s is None or oldest_s <= target_s:
            self._within_target_at = now
        if not self.standing:
            if oldest_s is not None and now - self._within_target_at >= interval_s:
                self.standing, self.since = True, now
        elif oldest_s is None and (self._crowded_at is None or now - self._crowded_at >= interval_s):
            self.standing = False
        return self.standing

    def crowded(self, now: float, *, refused: bool) -> None:
        """A newcomer found more work ahead than the target; `refused`: more than the bound, so it stands now."""
        self._crowded_at = now
        if refused and not self.standing:
            self.standing, self.since = True, now


def lateness_s(start_s: float, waiters: Iterable[tuple[float, float]]) -> float:
    """How late the most-late of `waiters` starts if they run earliest-promise-first from `start_s`.

    Each waiter is (its seconds on the lane, the latest start it was promised), in seconds from now.
    Earliest-deadline-first meets every promise that any order can meet (Jackson's rule), so a result
    of 0 or less means there is an order in which nobody is late, and how much more than 0 is how long
    a newcomer would have to wait for there to be one again.
    """
    late = float("-inf")
    for cost_s, start_by_s in sorted(waiters, key=lambda w: w[1]):
        late = max(late, start_s - start_by_s)
        start_s += cost_s
    return late


@dataclass(slots=True)
class VegasLimit:
    """How many of ⑤'s reviews may be on the lane at once (running or in its FIFO), learnt from latency.

    Netflix concurrency-limits' Vegas limit: from one review's time on the lane (`rtt_s`, queue
    included) and its time alone (`alone_s`, the measured service time), `limit × (1 − alone/rtt)`
    estimates how many of ⑤'s reviews stood in line; fewer than `alpha` and ⑤ had demand waiting:
    one more; more than `beta`: one fewer. Alone on the lane it settles at 2 (one running, one ready, so
    the lane never idles between ⑤'s reviews); when other paths fill the lane it backs off to 1.
    """

    limit: int = 2
    low: int = 1
    high: int = 8
    alpha: float = 0.5
    beta: float = 1.5

    def sample(self, rtt_s: float, alone_s: float, *, demand: bool) -> int:
        """One review done; `demand`: others were waiting for a place (only then can more help)."""
        if rtt_s > 0 and alone_s > 0:
            queued = self.limit * max(1 - alone_s / rtt_s, 0.0)
            if queued < self.alpha and demand:
                self.limit = min(self.limit + 1, self.high)
            elif queued > self.beta:
                self.limit = max(self.limit - 1, self.low)
        return self.limit
