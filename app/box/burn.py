"""Pad every inference with real CPU work on the same thread, for hosts where no CPU quota can be set."""

import hashlib
import time
from collections.abc import Sequence

from app.model import Ranking, Scorer

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

    def score(self, texts: Sequence[str]) -> list[Ranking]:
        started = time.thread_time()
        rankings = self._inner.score(texts)
        burn((time.thread_time() - started) * self.padding)
        return rankings
