"""A place in the lane's FIFO whose work is chosen when the lane reaches it: how ③ pulls its batches."""

import logging
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Generic, TypeVar

from app.model import Ranking, Wanted

log = logging.getLogger(__name__)
R = TypeVar("R")
# Called on the lane thread as each review of a job is scored: (index, ranking, started_at, finished_at).
Each = Callable[[int, Ranking, float, float], None]
FILL_GUARD_S = 60.0  # an owner that never fills its turn must not hold the lane for ever


class Turn(Generic[R]):
    """`reached` resolves when the lane gets to this turn; the lane then waits for `fill(texts)`.

    So a batch is formed at the moment the model can take it, on the owner's event loop, from
    whatever is waiting then (text-embeddings-inference's NextBatch, in Python). An empty fill
    (everyone left) gives the turn up; the owner fills every turn it was granted.

    `waited`, once `reached` is done, says whether the lane ran other work before it got here:
    the lane counts the inferences it begins, and the turn starts from the count it was queued at.
    """

    def __init__(self, begun_before: int = 0) -> None:
        self._begun_before = begun_before  # the lane's count of inferences begun, the running one not included
        self.waited = False
        self.reached: Future[None] = Future()
        self.result: Future[R] = Future()
        self._texts: Future[Sequence[str]] = Future()
        self.each: Each | None = None
        self.wanted: Wanted | None = None

    def fill(
        self,
        texts: Sequence[str],
        *,
        each: Each | None = None,
        wanted: Wanted | None = None,
    ) -> "Future[R]":
        """Called by the owner once `reached` is done; the lane infers `texts` at once, handing each review to
        `each` as it is scored and leaving out those `wanted` gives up on."""
        self.each, self.wanted = each, wanted
        self._texts.set_result(texts)
        return self.result

    def reached_front(self, begun: int) -> Sequence[str]:
        """On the lane thread, `begun` inferences in: a turn withdrawn before the front is skipped; a granted one
        waits for its texts."""
        if not self.reached.set_running_or_notify_cancel():
            return ()
        self.waited = begun > self._begun_before
        self.reached.set_result(None)
        try:
            return self._texts.result(timeout=FILL_GUARD_S)
        except TimeoutError:
            log.error("a batcher was granted the lane and never filled its turn; the lane moved on")
            self.result.set_exception(RuntimeError("turn not filled in time"))
            return ()
