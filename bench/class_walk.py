"""The class walk on ②, in-process: pages fire ② 12 with "거절되면 다시 오기" while a walk-in page fires without it.

A page with the toggle on (static/js/runner.js) fires its rows at once; a refused row (429/503 with
Retry-After) comes back after its Retry-After plus up to `jitter_s`, presenting the Seat-Hold it was given,
at most `returns` times. The walk-in page fires small bursts without the toggle: no tokens, no returns.
What it counts is what the class walk counted: the returners (rows refused on their first try) seated on
their first return, the holds that expired unclaimed, and the walk-ins served; and beside them the lane's
idle time while requests were refused (work conservation), from the scorer's own busy intervals.
"""

import asyncio
import random
import threading
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import astuple, dataclass, field, fields
from typing import Any

import httpx

from app.engine.model import Ranking, Scorer
from app.paths.registry import PATHS

ROUTE = next(p.route for p in PATHS if p.name == "limited")


@dataclass(frozen=True)
class ClassWalk:
    """Who comes when: `pages` pages of `burst` rows, `page_gap_s` apart, then the walk-in page's bursts."""

    pages: int = 3
    burst: int = 12
    page_gap_s: float = 0.2  # three students do not click in the same millisecond
    returns: int = 3  # runner.js RETRY_TIMES
    jitter_s: float = 0.5  # runner.js RETRY_JITTER_MS
    walk_in_burst: int = 4
    walk_in_at_s: tuple[float, ...] = (2.5, 7.5, 12.5, 17.5)
    seed: int = 7


@dataclass
class Try:
    """One request's try: when it was sent and answered (seconds from the walk's start) and what it got."""

    who: str  # "page" or "walk-in"
    row: int
    attempt: int  # 1 = first try, 2 = first return, ...
    sent_s: float
    answered_s: float = 0.0
    status: int = 0
    retry_after_s: float | None = None
    held: bool = False  # the refusal gave a Seat-Hold
    hold_result: str | None = None


class LaneTrace:
    """Wraps a scorer and records when the lane was busy, so idle time can be read off afterwards."""

    def __init__(self, scorer: Scorer) -> None:
        self._scorer = scorer
        self._lock = threading.Lock()
        self.t0 = time.monotonic()
        self.busy: list[tuple[float, float]] = []

    def score(self, texts: Sequence[str]) -> list[Ranking]:
        started = time.monotonic() - self.t0
        try:
            return self._scorer.score(texts)
        finally:
            with self._lock:
                self.busy.append((started, time.monotonic() - self.t0))

    def idle_at(self, t: float) -> bool:
        return not any(start <= t < end for start, end in self.busy)

    def idle_s(self, start: float, end: float) -> float:
        """Seconds in [start, end) with no review on the lane."""
        covered, edge = 0.0, start
        for begin, finish in sorted(self.busy):
            begin, finish = max(begin, edge), min(finish, end)
            if finish > begin:
                covered += finish - begin
                edge = finish
        return max(0.0, (end - start) - covered)


@dataclass
class Walk:
    """Sends the rows of one walk and keeps every try."""

    client: httpx.AsyncClient
    plan: ClassWalk
    t0: float
    tries: list[Try] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._jitter = random.Random(self.plan.seed)

    def rows(self) -> dict[str, Any]:
        """Every try in the order sent, for the record: one row of `columns` each."""
        tries = sorted(self.tries, key=lambda t: t.sent_s)
        rows = [[round(v, 3) if isinstance(v, float) else v for v in astuple(t)] for t in tries]
        return {"columns": [f.name for f in fields(Try)], "rows": rows}

    async def row(self, who: str, row: int, text: str, returns: int) -> None:
        """One row as runner.js fires it: refused with a Retry-After, it comes back with its token, `returns` times."""
        hold: str | None = None
        for attempt in range(1, returns + 2):
            one = Try(who, row, attempt, time.monotonic() - self.t0)
            answer = await self.client.post(ROUTE, json={"text": text}, headers={"Seat-Hold": hold} if hold else {})
            one.answered_s, one.status = time.monotonic() - self.t0, answer.status_code
            hint = answer.headers.get("Retry-After")
            one.retry_after_s = None if hint is None else float(hint)
            hold = answer.headers.get("Seat-Hold")
            one.held, one.hold_result = hold is not None, answer.headers.get("Seat-Hold-Result")
            self.tries.append(one)
            if answer.status_code not in (429, 503) or one.retry_after_s is None or attempt > returns:
                return
            await asyncio.sleep(one.retry_after_s + self._jitter.uniform(0.0, self.plan.jitter_s))

    async def page(self, p: int, samples: list[str]) -> None:
        """A page with the toggle on: its first burst sends the first `burst` samples, tagged apart."""
        await asyncio.sleep(p * self.plan.page_gap_s)
        n = self.plan.burst
        texts = [f"{samples[i % len(samples)]} #{self.plan.seed}p{p}-{i + 1}" for i in range(n)]
        await asyncio.gather(*(self.row("page", p * n + i, text, self.plan.returns) for i, text in enumerate(texts)))

    async def walk_ins(self, samples: list[str]) -> None:
        """The walk-in page: each burst the next samples, no toggle (no token, no return)."""
        fired: list[asyncio.Task[None]] = []
        n = self.plan.walk_in_burst
        for wave, at in enumerate(self.plan.walk_in_at_s):
            await asyncio.sleep(max(0.0, at - (time.monotonic() - self.t0)))
            for i in range(wave * n, wave * n + n):
                text = f"{samples[i % len(samples)]} #{self.plan.seed}w-{i + 1}"
                fired.append(asyncio.create_task(self.row("walk-in", i, text, 0)))
        await asyncio.gather(*fired)


async def run_walk(client: httpx.AsyncClient, plan: ClassWalk, samples: list[str], t0: float) -> Walk:
    """Every page's rows and the walk-in page's, each to its end."""
    walk = Walk(client, plan, t0)
    await asyncio.gather(*(walk.page(p, samples) for p in range(plan.pages)), walk.walk_ins(samples))
    return walk


def summary(walk: Walk, lane: LaneTrace, holds: dict[str, Any]) -> dict[str, Any]:
    """What the class walk counts, and the lane's idle time while someone was being refused."""
    first = {t.row: t for t in walk.tries if t.who == "page" and t.attempt == 1}
    again = {t.row: t for t in walk.tries if t.who == "page" and t.attempt == 2}
    returners = [row for row, t in first.items() if t.status != 200]
    seated_first = [row for row in returners if row in again and again[row].status == 200]
    served_rows = {t.row for t in walk.tries if t.who == "page" and t.status == 200}
    walk_ins = [t for t in walk.tries if t.who == "walk-in"]
    refused_walk_ins = [t for t in walk_ins if t.status != 200]
    end = max((t.answered_s for t in walk.tries if t.status == 200), default=0.0)
    # The lane idle in the second after a walk-in was refused: time it could have spent on that walk-in.
    windows = _union([(t.answered_s, t.answered_s + 1.0) for t in refused_walk_ins])
    return {
        "returners": len(returners),
        "seated_on_first_return": len(seated_first),
        "seated_on_first_return_share": round(len(seated_first) / len(returners), 3) if returners else None,
        "returners_served_in_the_end": sum(1 for row in returners if row in served_rows),
        "first_returns_with_a_hold": sum(1 for row in returners if first[row].held),
        "return_hold_results": _counts(t.hold_result for t in walk.tries if t.who == "page" and t.attempt > 1),
        "holds": holds,
        "walk_ins": len(walk_ins),
        "walk_ins_served": len(walk_ins) - len(refused_walk_ins),
        "walk_ins_refused_at_an_idle_lane": sum(1 for t in refused_walk_ins if lane.idle_at(t.answered_s)),
        "lane_idle_s_within_1s_after_a_walk_in_refusal": round(sum(lane.idle_s(a, b) for a, b in windows), 2),
        "lane_idle_s_until_last_answer": round(lane.idle_s(0.0, end), 2),
        "last_answer_s": round(end, 2),
    }


def _union(spans: list[tuple[float, float]]) -> list[tuple[float, float]]:
    merged: list[tuple[float, float]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def _counts(values: Iterable[str | None]) -> dict[str, int]:
    return dict(sorted(Counter(value or "none" for value in values).items()))
