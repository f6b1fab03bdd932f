"""Path 1's optional guard: refuse an inference that would push the process past its memory cap.

Off by default (`LAB_NAIVE_MEMORY_GUARD`): the naive path's lesson is that a crowd of
simultaneous inferences can take the box down. With the guard on, a request whose
measured cost would not fit gets 503 + Retry-After instead of a visit from the OOM killer.
"""

import asyncio
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass

import psutil

from app.engine.model import Scorer
from app.errors import MemoryWouldNotFit
from app.settings import Settings

log = logging.getLogger(__name__)

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
    # When the readings could not separate the two terms: the larger of the two one-term fits,
    # so a long review is never priced as if attention cost nothing.
    either: bool = False

    def bytes_for(self, text: str) -> int:
        n = len(text)
        linear, quadratic = self.per_char * n, self.per_char2 * n * n
        return int(self.margin * (max(linear, quadratic) if self.either else linear + quadratic))

    @classmethod
    def fit(cls, points: list[tuple[int, int]]) -> "MemoryCost":
        """From three (characters, RSS after a run of that length) readings, in increasing length.

        Only differences are used: what the first run needed is already partly in RSS from
        earlier work, but each longer run adds exactly what it needs beyond the shorter one.
        Never negative terms.
        """
        (n1, r1), (n2, r2), (n3, r3) = points
        d12, d23 = max(r2 - r1, 0), max(r3 - r2, 0)
        # d12 = a (n2 - n1) + b (n2² - n1²);  d23 = a (n3 - n2) + b (n3² - n2²)
        per_char2 = (d23 / (n3 - n2) - d12 / (n2 - n1)) / (n3 - n1)
        per_char = d12 / (n2 - n1) - per_char2 * (n2 + n1)
        if per_char2 < 0 or per_char < 0:
            grown = d12 + d23
            return cls(per_char=grown / (n3 - n1), per_char2=grown / (n3 * n3 - n1 * n1), either=True)
        return cls(per_char=per_char, per_char2=per_char2)


def measure_cost(scorer: Scorer, sample: str, rss: Callable[[], int] = current_rss) -> MemoryCost:
    """Run three longer reviews (built from `sample`) and fit the memory each longer one added.

    onnxruntime keeps its arena after a run, so the RSS a longer review adds over a shorter
    one is the extra working memory it needs.
    """
    points = []
    for n in (60, 180, 360):
        text = (sample * (n // max(len(sample), 1) + 1))[:n]
        scorer.score([text])
        points.append((n, rss()))
    return MemoryCost.fit(points)


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
                    reason="memory_would_not_fit",
                )
            self._promised += need
        return need

    def release(self, promised: int) -> None:
        with self._lock:
            self._promised -= promised


async def open_memory_guard(settings: Settings, scorer: Scorer, sample: str) -> MemoryGuard | None:
    """Measure one inference's memory now, before a crowd can, if the naive guard is on."""
    if not settings.naive_memory_guard or settings.memory_cap_bytes <= 0:
        return None
    cost = await asyncio.to_thread(measure_cost, scorer, sample)
    log.warning(
        "Naive memory guard on: cap %.0f MiB; a 200-character review measured at %.0f MiB.",
        settings.memory_cap_bytes / 2**20,
        cost.bytes_for("x" * 200) / 2**20,
    )
    return MemoryGuard(settings.memory_cap_bytes, cost)
