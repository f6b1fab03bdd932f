"""One batch of ③'s and what the batcher shows: why a batch goes, each request's future, and how a result reaches it.

The batcher (batched.py) decides when a batch goes; this module holds what is the same for
every batch, so that the scheduling reads on its own.
"""

import asyncio
import time
from dataclasses import dataclass, field

from app.errors import InferenceFailed
from app.lane import LaneResult
from app.paths import Outcome
from app.tally import TallySnapshot

# Why a batch went to the lane: it filled up, its window ended, or the lane came free for it.
# The collector exports each at 0 from the start (app/metrics.py's catalogue names the metric).
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


@dataclass(slots=True)
class Waiter:
    """One request held in a batch: its text, the future its handler awaits, when it arrived."""

    text: str
    future: "asyncio.Future[Outcome]"
    arrived: float = field(default_factory=time.monotonic)


def fail(waiter: Waiter, exc: BaseException, size: int) -> None:
    if not waiter.future.done():
        waiter.future.set_exception(InferenceFailed(f"Inference failed for this review (batch of {size}): {exc}"))


def resolve(batch: list[Waiter], result: LaneResult) -> None:
    """Each waiter still waiting gets its ranking, its own wait and the batch's inference time."""
    for w, ranking in zip(batch, result.rankings, strict=True):
        if not w.future.done():
            wait_s = result.started_at - w.arrived
            w.future.set_result(Outcome(ranking, wait_s, result.infer_s, len(batch)))
