"""Path 1's optional guard: refuse an inference that would push the process past its memory cap.

Off by default (`LAB_NAIVE_MEMORY_GUARD`): the naive path's lesson is that a crowd of
simultaneous inferences can take the box down. With the guard on, a request whose
measured cost would not fit gets 503 + Retry-After instead of a visit from the OOM killer.
"""

import threading
from collections.abc import Callable
from dataclasses import dataclass

import psutil

from app.errors import MemoryWouldNotFit
from app.model import Scorer

_process = psutil.Process()


def current_rss() -> int:
    return int(_process.memory_info().rss)


@dataclass(frozen=True, slots=True)
class MemoryCost:
    """Bytes one inference needs, as `per_char * n + per_char2 * n**2` for a review of n characters.

    Activations grow linearly (feed-forward) and quadratically (attention) with length, so
    two measured lengths pin down both terms. `margin` covers what a fit cannot see.
    """

    per_char: float
    per_char2: float
    margin: float = 1.25

    def bytes_for(self, text: str) -> int:
        n = len(text)
        return int(self.margin * (self.per_char * n + self.per_char2 * n * n))

    @classmethod
    def fit(cls, short: tuple[int, int], long: tuple[int, int]) -> "MemoryCost":
        """From two (characters, bytes) measurements; never negative terms."""
        (n1, m1), (n2, m2) = short, long
        m1, m2 = max(m1, 0), max(m2, 0)
        per_char2 = (m2 / n2 - m1 / n1) / (n2 - n1)
        if per_char2 < 0:
            return cls(per_char=max(m1 / n1, m2 / n2), per_char2=0.0)
        return cls(per_char=max(m1 / n1 - per_char2 * n1, 0.0), per_char2=per_char2)


def measure_cost(scorer: Scorer, sample: str, rss: Callable[[], int] = current_rss) -> MemoryCost:
    """Run two longer reviews (built from `sample`) and fit the memory they added.

    onnxruntime keeps its arena after a run, so RSS growth from before the first run to
    after each run is that length's working memory. Call it before any long review ran.
    """
    points = []
    before = rss()
    for n in (60, 180):
        text = (sample * (n // max(len(sample), 1) + 1))[:n]
        scorer.score([text])
        points.append((n, rss() - before))
    return MemoryCost.fit(points[0], points[1])


class MemoryGuard:
    """Admits an inference only if RSS + the memory already promised + its cost stay under the cap."""

    def __init__(self, cap_bytes: int, cost: MemoryCost, rss: Callable[[], int] = current_rss) -> None:
        self.cap_bytes = cap_bytes
        self.cost = cost
        self._rss = rss
        self._lock = threading.Lock()
        self._promised = 0
        self.refused = 0

    def reserve(self, text: str, retry_after_s: float) -> int:
        """Promise memory to one inference or raise MemoryWouldNotFit; `release` it afterwards."""
        need = self.cost.bytes_for(text)
        with self._lock:
            projected = self._rss() + self._promised + need
            if projected > self.cap_bytes:
                self.refused += 1
                raise MemoryWouldNotFit(
                    f"Memory guard: this review needs about {need / 2**20:.0f} MiB and the process would reach "
                    f"{projected / 2**20:.0f} MiB, over the {self.cap_bytes / 2**20:.0f} MiB cap. Try again later.",
                    retry_after_s,
                )
            self._promised += need
        return need

    def release(self, promised: int) -> None:
        with self._lock:
            self._promised -= promised
