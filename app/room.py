"""When there will be room: the one owner of every Retry-After and ETA hint on the lane.

Every hint is the lane's backlog (the running inference's remainder plus its FIFO) plus what
the asking path holds in front of the newcomer, at the measured service time. ② adds its
waiting seats, ③ its open batch, ④ the queued jobs ahead (shared among live workers).
"""

from collections.abc import Callable

__all__ = ["Room"]


class Room:
    """Built by the lane from its backlog and clock; paths ask it, never the clock directly."""

    def __init__(
        self,
        backlog_s: Callable[[], float],
        remaining_s: Callable[[], float],
        per_review_s: Callable[[], float],
        estimate_s: Callable[[int, int], float],
    ) -> None:
        self._backlog_s = backlog_s
        self.remaining_s = remaining_s  # the running inference's remainder (0 if idle)
        self._per_review_s = per_review_s
        self._estimate_s = estimate_s

    def after_reviews(self, held: int) -> float:
        """Seconds until the lane reaches a newcomer behind `held` reviews of average length."""
        return self._backlog_s() + held * self._per_review_s()

    def after_jobs(self, jobs: int, chars: int, own_chars: int, workers: int = 1) -> float:
        """Seconds until a job of `own_chars` is done, behind `jobs` queued jobs of `chars` in all
        that `workers` boxes share, each costing what its length predicts."""
        queued_s = self._estimate_s(jobs, chars) / max(workers, 1)
        return self._backlog_s() + queued_s + self._estimate_s(1, own_chars)

    def one(self, chars: int) -> float:
        """Seconds one review of `chars` characters takes on the model."""
        return self._estimate_s(1, chars)

    @property
    def per_review_s(self) -> float:
        return self._per_review_s()
