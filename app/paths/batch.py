"""One batch of ③'s and what the batcher shows: why a batch goes, each request's future, and how a result reaches it.

The batcher (batched.py) decides when a batch goes and the handover (handover.py) carries it to the
lane and back; this module holds what is the same for every batch, so that the scheduling reads on its own.
"""

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from app.engine.lane import LaneResult
from app.engine.tally import TallySnapshot
from app.errors import InferenceFailed
from app.paths.pipeline import Outcome

# Why a batch went to the lane: it filled up, its window ended, or the lane came free for it.
# The collector exports each at 0 from the start (app/observe/metrics.py's catalogue names the metric).
BATCH_CLOSE_REASONS = ("full", "timer", "lane_free")


@dataclass(frozen=True, slots=True)
class BatcherSnapshot:
    in_flight: int
    waiting: int
    last_batch_size: int
    skipped_gone: int
    closed: dict[str, int]  # batches sent to the lane, by why they went
    sizes: TallySnapshot
    rejections: dict[str, int]


class Reply(asyncio.Future[Outcome]):
    """A waiter's future, which says at once when it is cancelled (its client left), not a loop step later as a
    done-callback would: the batch it was handed over in leaves it out even if the lane takes the batch next."""

    def __init__(self) -> None:
        super().__init__(loop=asyncio.get_running_loop())
        self.on_cancel: Callable[[], None] | None = None

    def cancel(self, msg: object = None) -> bool:
        cancelled = super().cancel(msg)
        if cancelled and self.on_cancel is not None:
            self.on_cancel()
        return cancelled


@dataclass(slots=True)
class Waiter:
    """One request held in a batch: its text, the future its handler awaits, when it arrived."""

    text: str
    future: Reply = field(default_factory=Reply)
    arrived: float = field(default_factory=time.monotonic)


def fail(waiter: Waiter, exc: BaseException, size: int) -> None:
    if not waiter.future.done():
        waiter.future.set_exception(InferenceFailed(f"Inference failed for this review (batch of {size}): {exc}"))


def resolve(batch: list[Waiter], result: LaneResult, number: int | None = None) -> None:
    """Each waiter still waiting gets its ranking, its own wait and the batch's inference time: the last member,
    and any whose answer the loop had not read yet (the others were answered as they finished: handover.py)."""
    for w, ranking in zip(batch, result.rankings, strict=True):
        if w.future.done():
            continue
        if ranking is None:  # left out because it looked gone: never leave a waiter hanging
            fail(w, RuntimeError("left out of its batch"), len(batch))
        else:
            w.future.set_result(Outcome(ranking, result.started_at - w.arrived, result.infer_s, len(batch), number))
