"""Pad every inference with real CPU work on the same thread, for hosts where no CPU quota can be set."""

import hashlib
import time
from collections.abc import Iterator, Sequence

from app.engine.model import Ranking, Scorer, Wanted, in_order, score_each

# hashlib releases the GIL for buffers this large, so burning threads compete for the CPU
# (like onnxruntime does), not for the interpreter lock.
_BLOCK = bytes(64 * 1024)


def burn(cpu_seconds: float) -> None:
    """Use `cpu_seconds` of this thread's CPU time. Never sleeps: a sleeping box would run N requests in parallel."""
    end = time.thread_time() + cpu_seconds
    while time.thread_time() < end:
        hashlib.sha256(_BLOCK).digest()


class BurningScorer:
    """Runs the model, then burns `padding` x the CPU time the model used on this thread.

    N concurrent inferences on one core then each take N x (1 + padding) x their cost, as on a
    CPU (1 + padding) times slower.
    """

    def __init__(self, inner: Scorer, padding: float) -> None:
        self._inner = inner
        self.padding = padding

    @property
    def inner(self) -> Scorer:
        return self._inner

    def score(self, texts: Sequence[str]) -> list[Ranking]:
        return in_order(self.score_each(texts), len(texts))

    def score_each(self, texts: Sequence[str], wanted: Wanted | None = None) -> Iterator[tuple[int, Ranking]]:
        """Burns before each review is handed on, so a batch's members finish as late as on a slower CPU."""
        started = time.thread_time()
        for scored in score_each(self._inner, texts, wanted):
            burn((time.thread_time() - started) * self.padding)
            started = time.thread_time()
            yield scored
        burn((time.thread_time() - started) * self.padding)  # pairs of members left out cost time too
