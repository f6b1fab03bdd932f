"""Path 1: every request infers at once on its own server thread; nobody waits, nobody is refused."""

import threading
import time

from app import metrics
from app.model import Ranking, Scorer

PATH = "naive"


class NaiveRunner:
    """Calls the model directly from whatever thread the server gave the request.

    No lane, no limit: twelve requests mean twelve inferences fighting for the CPU and
    twelve sets of activations in memory at once. That is the lesson.
    """

    def __init__(self, scorer: Scorer) -> None:
        self._scorer = scorer
        self._lock = threading.Lock()
        self.in_flight = 0

    def run(self, text: str) -> tuple[Ranking, float]:
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
        return ranking, time.monotonic() - started
