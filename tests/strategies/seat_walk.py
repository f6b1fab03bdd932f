"""② on a fake clock: the seat policy (app/paths/seat_policy.py) run over a discrete-event model of the gate.

The model keeps what the gate's mechanism keeps (seated and in flight, live holds with their grace, told
times, the lobby where a returner with a live hold waits, earliest due first) and asks the policy every
question the gate asks, at the instants the gate would. Clients are the class walk's: pages whose refused
rows come back after Retry-After plus a jitter with their Seat-Hold (runner.js), and a walk-in page without.
Deterministic for a seed; no sleeping, no event loop.
"""

import heapq
import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field

from app.paths.seat_plan import Returner
from app.paths.seat_policy import Seats, admits_walk_in, refusal


@dataclass
class Request:
    who: str  # "page" or "walk-in"
    row: int
    cost_s: float  # what it takes on the lane
    returns_left: int
    attempt: int = 1
    hold: int | None = None  # the hold it presents (an id), if it was given one


@dataclass
class Hold:
    due: float
    expires: float
    cost_s: float
    in_lobby: bool = False


@dataclass(frozen=True)
class Try:
    who: str
    row: int
    attempt: int
    at: float
    seated: bool
    held: bool = False  # the refusal came with a Seat-Hold
    late_s: float = 0.0  # a returner with a hold: how long after its due time it sat down


@dataclass
class Box:
    """② (1 in flight + `seats`) with holds, on the model's clock; `forecast` scales the costs the policy sees."""

    seats: int = 4
    grace_s: float = 3.0
    horizon_reviews: int = 15
    jitter_s: float = 0.5
    forecast: float = 1.0  # the policy's estimate over the true cost (1: exact; above: pessimistic)
    seed: int = 7
    now: float = 0.0
    tries: list[Try] = field(default_factory=list)
    lane_busy: list[tuple[float, float]] = field(default_factory=list)
    no_shows: int = 0

    def __post_init__(self) -> None:
        self._events: list[tuple[float, int, Callable[[], None]]] = []
        self._order = 0
        self._jitter = random.Random(self.seed)
        self._seated: list[Request] = []
        self._running: tuple[Request, float] | None = None  # and when it ends
        self._lobby: list[tuple[float, int, Request]] = []  # (due, order, request)
        self._holds: dict[int, Hold] = {}
        self._told: list[Returner] = []  # absolute due times
        self._busy_since: float | None = None
        self._mean_s = 1.0

    # The clients

    def at(self, t: float, action: Callable[[], None]) -> None:
        self._order += 1
        heapq.heappush(self._events, (t, self._order, action))

    def send(self, t: float, request: Request) -> None:
        self.at(t, lambda: self._arrive(request))

    def run(self) -> "Box":
        while self._events:
            self.now, _, action = heapq.heappop(self._events)
            action()
        return self

    # What the gate sees, for the policy

    def view(self) -> Seats:
        now, est = self.now, self.forecast
        self._expire()
        held = tuple(Returner(h.due - now, h.cost_s * est) for h in self._holds.values() if h.due > now)
        told = tuple(Returner(r.due_s - now, r.cost_s) for r in self._told if r.due_s > now)
        return Seats(
            capacity=1 + self.seats,
            lane_ahead_s=0.0 if self._running is None else (self._running[1] - now) * est,
            in_flight=0 if self._running is None else 1,
            seated_s=tuple(r.cost_s * est for r in self._seated),
            held=held,
            told=told,
            in_lobby=len(self._lobby),
            busy_for_s=math.inf if self._busy_since is None else now - self._busy_since,
            per_review_s=self._mean_s * est,
            holds_on=self.grace_s > 0,
            horizon_reviews=self.horizon_reviews,
        )

    # The mechanism

    def _arrive(self, request: Request) -> None:
        self._expire()
        hold = self._holds.get(request.hold) if request.hold is not None else None
        if hold is not None and not hold.in_lobby:
            hold.in_lobby = True
            self._order += 1
            heapq.heappush(self._lobby, (hold.due, self._order, request))
            self.at(hold.expires, lambda: self._leave_lobby(request))
            self._seat_from_lobby()
            return
        if admits_walk_in(self.view(), request.cost_s * self.forecast):
            self._sit(request, late_s=0.0)
        else:
            self._refuse(request)

    def _refuse(self, request: Request) -> None:
        told = refusal(self.view(), request.cost_s * self.forecast)
        come_back = math.ceil(told.retry_after_s)
        hold_id = None
        if told.hold:
            hold_id = self._order = self._order + 1
            self._holds[hold_id] = Hold(self.now + come_back, self.now + come_back + self.grace_s, request.cost_s)
        elif self.grace_s > 0:
            self._told.append(Returner(self.now + come_back, request.cost_s * self.forecast))
        self.tries.append(Try(request.who, request.row, request.attempt, self.now, False, held=hold_id is not None))
        if request.returns_left > 0:
            back = Request(request.who, request.row, request.cost_s, request.returns_left - 1, request.attempt + 1)
            back.hold = hold_id
            self.send(self.now + come_back + self._jitter.uniform(0.0, self.jitter_s), back)

    def _leave_lobby(self, request: Request) -> None:
        """Its grace window ended in the lobby: judged as a walk-in (as the gate does)."""
        waiting = [entry for entry in self._lobby if entry[2] is request]
        if not waiting:
            return
        self._lobby.remove(waiting[0])
        heapq.heapify(self._lobby)
        assert request.hold is not None
        del self._holds[request.hold]
        request.hold = None
        self._arrive(request)

    def _seat_from_lobby(self) -> None:
        while self._lobby and 1 + self.seats - self._admitted() > 0:
            due, _, request = heapq.heappop(self._lobby)
            assert request.hold is not None
            del self._holds[request.hold]
            self._sit(request, late_s=max(0.0, self.now - due))

    def _admitted(self) -> int:
        return len(self._seated) + (self._running is not None)

    def _sit(self, request: Request, late_s: float) -> None:
        if self._admitted() == 0:
            self._busy_since = self.now
        self._seated.append(request)
        self.tries.append(Try(request.who, request.row, request.attempt, self.now, True, late_s=late_s))
        self._start_next()

    def _start_next(self) -> None:
        if self._running is None and self._seated:
            request = self._seated.pop(0)
            ends = self.now + request.cost_s
            self._running = (request, ends)
            self.lane_busy.append((self.now, ends))
            self.at(ends, self._finish)

    def _finish(self) -> None:
        self._running = None
        self._start_next()
        self._seat_from_lobby()

    def _expire(self) -> None:
        for hold_id in [i for i, h in self._holds.items() if h.expires <= self.now and not h.in_lobby]:
            del self._holds[hold_id]
            self.no_shows += 1
        self._told = [r for r in self._told if r.due_s > self.now]

    # What the walk counts

    def idle_at(self, t: float) -> bool:
        return not any(start <= t < end for start, end in self.lane_busy)

    def idle_s(self, start: float, end: float) -> float:
        """Seconds of [start, end) with nothing on the lane."""
        busy = sum(max(0.0, min(e, end) - max(s, start)) for s, e in self.lane_busy)
        return (end - start) - busy


@dataclass(frozen=True)
class Counted:
    returners: int
    seated_on_first_return: int
    walk_ins: int
    walk_ins_served: int
    walk_ins_refused_at_an_idle_lane: int
    lane_idle_s_after_walk_in_refusals: float  # in the second after each (the union)
    latest_returner_s: float  # the most a returner with a hold sat down after its due time


def class_walk(box: Box, costs: list[float], *, pages: int = 3, walk_in_at: tuple[float, ...] = ()) -> Counted:
    """Pages fire `len(costs)` rows 0.2 s apart (up to three returns each); the walk-in page fires four rows at
    each time in `walk_in_at`, without returns. Runs the box to the end and counts as bench/class_walk.py does."""
    box._mean_s = sum(costs) / len(costs)
    n = len(costs)
    for p in range(pages):
        for i, cost in enumerate(costs):
            box.send(p * 0.2, Request("page", p * n + i, cost, returns_left=3))
    for wave, at in enumerate(walk_in_at):
        for i in range(4):
            box.send(at, Request("walk-in", wave * 4 + i, costs[(wave * 4 + i) % n], returns_left=0))
    box.run()
    return count(box)


def count(box: Box) -> Counted:
    first = {t.row: t for t in box.tries if t.who == "page" and t.attempt == 1}
    again = {t.row: t for t in box.tries if t.who == "page" and t.attempt == 2}
    returners = [row for row, t in first.items() if not t.seated]
    walk_ins = [t for t in box.tries if t.who == "walk-in"]
    refused = [t for t in walk_ins if not t.seated]
    windows: list[tuple[float, float]] = []
    for t in sorted(refused, key=lambda t: t.at):
        if windows and t.at <= windows[-1][1]:
            windows[-1] = (windows[-1][0], t.at + 1.0)
        else:
            windows.append((t.at, t.at + 1.0))
    return Counted(
        returners=len(returners),
        seated_on_first_return=sum(1 for row in returners if row in again and again[row].seated),
        walk_ins=len(walk_ins),
        walk_ins_served=len(walk_ins) - len(refused),
        walk_ins_refused_at_an_idle_lane=sum(1 for t in refused if box.idle_at(t.at)),
        lane_idle_s_after_walk_in_refusals=round(sum(box.idle_s(a, b) for a, b in windows), 3),
        latest_returner_s=max((t.late_s for t in box.tries if t.seated), default=0.0),
    )
