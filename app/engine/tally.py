"""Bucketed observations (a histogram's data), kept by whoever measures and read at scrape time."""

import bisect
import threading
from dataclasses import dataclass

WAIT_BUCKETS = (0.005, 0.025, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60, 120)
INFERENCE_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 0.75, 1, 1.5, 2, 3, 5, 8, 13, 20)
BATCH_SIZE_BUCKETS = (1, 2, 3, 4, 5, 6, 7, 8)


@dataclass(frozen=True, slots=True)
class TallySnapshot:
    """`cumulative[i]` observations were <= `bounds[i]`; `count` includes those above every bound."""

    bounds: tuple[float, ...]
    cumulative: tuple[int, ...]
    count: int
    total: float


class Tally:
    """A histogram without a registry: `observe` from any thread, `snapshot` for the collector."""

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self._bounds = tuple(float(b) for b in bounds)
        self._counts = [0] * (len(bounds) + 1)
        self._total = 0.0
        self._lock = threading.Lock()

    def observe(self, value: float) -> None:
        with self._lock:
            self._counts[bisect.bisect_left(self._bounds, value)] += 1
            self._total += value

    def snapshot(self) -> TallySnapshot:
        with self._lock:
            counts, total = list(self._counts), self._total
        cumulative, running = [], 0
        for count in counts[:-1]:
            running += count
            cumulative.append(running)
        return TallySnapshot(self._bounds, tuple(cumulative), sum(counts), total)
