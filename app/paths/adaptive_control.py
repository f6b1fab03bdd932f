"""⑤'s controllers, pure and clock-free: CoDel's "is the queue standing?", a Vegas-like concurrency limit,
the promise check that keeps newest-first from making anyone late, and who has come in a crowd.

Each takes the time as an argument, so tests drive them with a fake clock; app/paths/adaptive.py
owns the queue and asks them (docs/adaptive.md says where they depart from their sources).
"""

from collections.abc import Iterable, Sequence
from dataclasses import dataclass


class StandingQueue:
    """CoDel (Nichols & Jacobson, ACM Queue 2012) asked at a request queue's door: has the queue stood?

    CoDel watches the minimum sojourn over an interval; here the sojourn is the one predicted for each
    newcomer (the work ahead of it, the lane's FIFO included, which ⑤ cannot look into). The queue
    turns standing when that stayed above the target for a whole interval, or at once when a newcomer
    is refused (the load does not fit: waiting to measure it would admit another interval's worth
    first). It turns back only when a newcomer finds the box idle and nobody found more than the target
    ahead for an interval (Facebook's "the queue has been empty within the interval", Fail at Scale,
    ACM Queue 2015): while it stands, newest first keeps the served sojourns short, so CoDel's own exit
    would let it go at once and the queue would build again. `busy_since` is when the box last went
    from idle to busy: a crowd that found it idle is let through by the interval after that.
    """

    def __init__(self) -> None:
        self.standing = False
        self.since = 0.0  # when it last turned standing
        self.busy_since = 0.0
        self._above_since: float | None = None  # since when every newcomer found more than the target ahead
        self._crowded_at: float | None = None  # the last newcomer that found more than the target ahead

    def seen(self, now: float, ahead_s: float, *, idle: bool, target_s: float, interval_s: float) -> bool:
        """Called at every arrival with the work ahead of it; `idle`: nothing runs or waits on the box."""
        if idle:
            self.busy_since = now
        if ahead_s <= target_s:
            self._above_since = None
        else:
            self._crowded_at = now
            if self._above_since is None:
                self._above_since = now
        if not self.standing:
            if self._above_since is not None and now - self._above_since >= interval_s:
                self.standing, self.since = True, now
        elif idle and (self._crowded_at is None or now - self._crowded_at >= interval_s):
            self.standing = False
        return self.standing

    def refused(self, now: float) -> None:
        """A newcomer was turned away: the load does not fit, so the queue stands."""
        self._crowded_at = now
        if not self.standing:
            self.standing, self.since = True, now


class Crowd:
    """Who has come to ⑤ in this crowd: since the box last went from idle to busy.

    In a crowd's first moments (a class pressing together on a cue arrives over a second or so), a
    student's second and later requests are not judged yet: they wait until that moment is over, or
    until the lane would otherwise idle, and are then judged in the order they came against the room
    left. Every student's first request is judged at once. Without this, whoever clicks first with
    twelve takes every place before classmates' one each arrive a few hundred milliseconds later.
    Requests without a student key are each their own: judged at once.
    """

    MAX_STUDENTS = 2_000  # a bound on memory against made-up keys, far above a class

    def __init__(self) -> None:
        self.since: float | None = None
        self.came: set[str] = set()

    def repeat(self, student: str | None, busy_since: float) -> bool:
        """Whether this is `student`'s second or later request in the crowd that began at `busy_since`."""
        if busy_since != self.since:
            self.since, self.came = busy_since, set()
        if student is None:
            return False
        if student in self.came:
            return True
        if len(self.came) < self.MAX_STUDENTS:
            self.came.add(student)
        return False


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


def pick(waiting: Sequence[tuple[float, float]], ahead_s: float, *, newest: bool) -> int:
    """Which of `waiting` (in arrival order, each as in `lateness_s`) goes to the lane next, `ahead_s` from now.

    The newest (or, while draining, the oldest) unless sending it first would make the rest later than the
    best order would (earliest promise first): then the one with the earliest promise.
    """
    preferred = len(waiting) - 1 if newest else 0
    urgent = min(range(len(waiting)), key=lambda i: waiting[i][1])
    if preferred == urgent:
        return preferred
    rest = [w for i, w in enumerate(waiting) if i != preferred]
    late_after_s = lateness_s(ahead_s + waiting[preferred][0], rest)
    return preferred if late_after_s <= max(lateness_s(ahead_s, waiting), 0.0) else urgent
