"""A turn on the lane whose work its owner has handed over by the time the lane gets there: how ③ feeds the lane.

The lane never waits for an owner. When it reaches a turn it calls the owner's methods below, on its own
thread, in order: `take` answers at once from what the owner had handed over until then (a thread-safe
batch the owner's loop fills): texts to infer now, or None, and the lane moves on to its next work; then,
while it infers them, `wanted` before each model call and `scored` as each review is scored; `done` once
the lane is idle again. Who is answered when is the owner's business (app/paths/handover.py).
"""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from app.engine.model import Ranking

R = TypeVar("R")
R_contra = TypeVar("R_contra", contravariant=True)


class TurnOwner(Protocol[R_contra]):
    """Whose turn it is; every method is called on the lane thread and must not block."""

    def take(self, waited: bool) -> Sequence[str] | None:
        """The lane reached the turn (`waited`: it ran other work since the turn was queued): what to infer now."""

    def wanted(self, i: int) -> bool:
        """Is review i still awaited? Asked before each model call: one nobody awaits is left out."""

    def scored(self, i: int, ranking: Ranking, started: float, finished: float) -> None:
        """Review i's ranking, as soon as the model has it."""

    def done(self, result: R_contra | Exception) -> None:
        """The whole call's result (or what failed it), once the lane is idle again."""


@dataclass(frozen=True, slots=True)
class Turn(Generic[R]):
    """A turn waiting in the lane's FIFO."""

    owner: TurnOwner[R]
    begun_before: int  # the lane's count of inferences begun when it was queued, the running one not included
