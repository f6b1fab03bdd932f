"""Path 1: every request infers at once on its own server thread; nobody waits, nobody is refused."""

import threading
import time

from app import metrics
from app.memory_guard import MemoryGuard
from app.model import Ranking, Scorer

PATH = "naive"


class NaiveRunner:
    """Calls the model directly from whatever thread the server gave the request.

    No lane, no limit: twelve requests mean twelve inferences fighting for the CPU and
    twelve sets of activations in memory at once. That is the lesson. An optional
    MemoryGuard (off by default) refuses the inference that would not fit in memory.
    """

    def __init__(self, scorer: Scorer, guard: MemoryGuard | None = None) -> None:
        self._scorer = scorer
        self._guard = guard
        self._lock = threading.Lock()
        self.in_flight = 0
        self.last_infer_s = 1.0

    def run(self, text: str) -> tuple[Ranking, float]:
        promised = 0
        if self._guard is not None:
            try:
                promised = self._guard.reserve(text, retry_after_s=self.last_infer_s)
            except Exception:
                metrics.REJECTIONS.labels(PATH, "memory_would_not_fit").inc()
                raise
        with self._lock:
            self.in_flight += 1
            metrics.IN_FLIGHT.labels(PATH).set(self.in_flight)
        started = time.monotonic()
        try:
            (ranking,) = self._scorer.score([text])
        finally:
            with self._lock:
                self.in_flight -= 1
                metrics.IN_FLIGHT.labels(PATH).set(self.in_flight)
            if self._guard is not None:
                self._guard.release(promised)
        infer_s = time.monotonic() - started
        self.last_infer_s = infer_s
        return ranking, infer_s
