"""When there will be room: the one owner of every Retry-After and ETA hint on the lane.

Every hint is the lane's backlog (the running inference's remainder plus its FIFO) plus what
the asking path holds in front of the newcomer, at the measured service time. ② adds its
waiting seats, ③ its open batch, ④ the queued jobs ahead (shared among live workers). A
ticket waits many lane turns, and the paths take turns on the lane (each hands over its next
piece of work when the last one ends), so its ETA also counts what the other paths hold for
those turns: seated ② requests and ③ batches not yet on the lane (`share`).
"""

from collections.abc import Callable

# The seconds each piece of work a path holds back from the lane will cost, in the order it will go.
Held = Callable[[], list[float]]

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
        self._sharers: dict[str, tuple[Held, int]] = {}
        self._listeners: list[Callable[[], None]] = []

    def on_change(self, listener: Callable[[], None]) -> None:
        """Call `listener` (on the event loop) when a sharing path's held work changes: a ticket's
        ETA moved though nothing changed in the job store, so its followers must look again."""
        self._listeners.append(listener)

    def changed(self) -> None:
        for listener in self._listeners:
            listener()

    def share(self, path: str, held: Held, in_fifo: int = 0) -> None:
        """A path that holds work back from the lane and hands it over a piece per turn (②, ③); `in_fifo`
        of its pieces already wait in the lane's FIFO without being in the backlog (③'s turn)."""
        self._sharers[path] = (held, in_fifo)

    def others_s(self, turns: int, but: str | None = None) -> float:
        """Seconds of the sharing paths' held work (all but the asking path `but`) the lane runs within the
        next `turns` turns."""
        return sum(sum(held()[: turns + in_fifo]) for path, (held, in_fifo) in self._sharers.items() if path != but)

    def after_reviews(self, held: int) -> float:
        """Seconds until the lane reaches a newcomer behind `held` reviews of average length."""
        return self._backlog_s() + held * self._per_review_s()

    def after_jobs(self, jobs: int, chars: int, own_chars: int, workers: int = 1) -> float:
        """Seconds until a job of `own_chars` is done, behind `jobs` queued jobs of `chars` in all
        that `workers` boxes share, each costing what its length predicts, and behind the other
        paths' held work for as many lane turns as this box's worker takes to reach it."""
        workers = max(workers, 1)
        queued_s = self._estimate_s(jobs, chars) / workers
        turns = -(-jobs // workers) + 1  # this box's share of the jobs ahead, then its own
        return self._backlog_s() + queued_s + self._estimate_s(1, own_chars) + self.others_s(turns)

    def one(self, chars: int) -> float:
        """Seconds one review of `chars` characters takes on the model."""
        return self._estimate_s(1, chars)

    @property
    def per_review_s(self) -> float:
        return self._per_review_s()
