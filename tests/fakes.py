"""A fake model for deterministic concurrency tests: calls block until the test lets them go."""

import threading
from collections.abc import Iterator, Sequence

from app.engine.model import Ranking, TopicScore, Wanted


def fake_ranking(text: str) -> Ranking:
    """A ranking that names its own text, so each caller can check it got its own answer."""
    return [TopicScore(id=f"echo:{text}", label="echo", score=0.9), TopicScore(id="other", label="기타", score=0.1)]


class GatedScorer:
    """Records every batch; when gated, each call waits for `release()` before returning."""

    def __init__(self, *, gated: bool = True, fail_on: str | None = None) -> None:
        self.calls: list[list[str]] = []
        self._gated = gated
        self._fail_on = fail_on
        self._permits = threading.Semaphore(0)
        self._entered = threading.Semaphore(0)
        self._lock = threading.Lock()
        self.active = 0
        self.max_active = 0

    def score(self, texts: Sequence[str]) -> list[Ranking]:
        with self._lock:
            self.calls.append(list(texts))
            self.active += 1
            self.max_active = max(self.max_active, self.active)
        self._entered.release()
        try:
            if self._gated and not self._permits.acquire(timeout=30):
                raise TimeoutError("test never released the scorer")
            if self._fail_on is not None and self._fail_on in texts:
                raise ValueError(f"cannot score {self._fail_on!r}")
            return [fake_ranking(t) for t in texts]
        finally:
            with self._lock:
                self.active -= 1

    def release(self, n: int = 1) -> None:
        for _ in range(n):
            self._permits.release()

    def open(self) -> None:
        """Stop gating: every call from now on (and any waiting) returns at once."""
        self._gated = False
        self.release(1000)

    def wait_entered(self, n: int = 1, timeout: float = 10) -> None:
        """Block until `n` more calls have entered `score` (a failure guard, not a delay)."""
        for _ in range(n):
            if not self._entered.acquire(timeout=timeout):
                raise TimeoutError(f"scorer was not entered {n} times")


class StreamingScorer(GatedScorer):
    """Streams like the real model (app/engine/model.py's `score_each`): each review is one model call, made when
    the test releases it, in order; `wanted` is asked just before it, as the model asks before each call."""

    def __init__(self, *, tail: bool = False) -> None:
        super().__init__()
        self.left_out: list[str] = []
        self._tail = tail  # after a batch's last review the call waits for one more release (its last bookkeeping)

    def score_each(self, texts: Sequence[str], wanted: Wanted | None = None) -> Iterator[tuple[int, Ranking]]:
        with self._lock:
            self.calls.append(list(texts))
        self._entered.release()
        for i, text in enumerate(texts):
            if self._gated and not self._permits.acquire(timeout=30):  # one release, one model call
                raise TimeoutError("test never released the scorer")
            if wanted is not None and not wanted(i):
                self.left_out.append(text)
                continue
            yield i, fake_ranking(text)
        if self._tail and len(texts) > 1 and self._gated and not self._permits.acquire(timeout=30):
            raise TimeoutError("test never released the scorer's tail")
