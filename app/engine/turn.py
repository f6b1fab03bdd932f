"""A turn on the lane whose work its owner has handed over by the time the lane gets there: how ③ feeds the lane.

The lane never waits for an owner. When it reaches a turn it calls the owner's `Take`, on its own
thread, which answers at once from what the owner had handed over until then (a thread-safe batch
the owner's loop fills): a batch to infer now, or None, and the lane moves on to its next work.
"""

from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Generic, TypeVar

from app.engine.model import Ranking, Wanted

R = TypeVar("R")
# Called on the lane thread as each review of a job is scored: (index, ranking, started_at, finished_at).
Each = Callable[[int, Ranking, float, float], None]


@dataclass(frozen=True, slots=True)
class Pulled(Generic[R]):
    """What an owner gives the lane at its turn: texts to infer at once, and where what the lane makes of them goes."""

    texts: Sequence[str]
    result: "Future[R]"  # set on the lane thread once the lane is idle again
    each: Each  # every review as it is scored; who is answered when is the owner's business
    wanted: Wanted  # is review i still awaited? thread-safe, asked before each model call


# Called on the lane thread when it reaches the turn; True if the lane ran other work since the turn was queued.
# Must not block: it returns what is there (None: nothing, the turn is skipped).
Take = Callable[[bool], Pulled[R] | None]


@dataclass(frozen=True, slots=True)
class Turn(Generic[R]):
    """A turn waiting in the lane's FIFO."""

    take: Take[R]
    begun_before: int  # the lane's count of inferences begun when it was queued, the running one not included
