"""One batch of ③'s and what the batcher shows: why a batch goes, each request's future, and how a result reaches it.

The batcher (batched.py) decides when a batch goes; this module holds what is the same for
every batch, so that the scheduling reads on its own.
"""

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from app.errors import InferenceFailed
from app.lane import LaneResult
from app.model import Ranking, Wanted
from app.paths import Outcome
from app.tally import TallySnapshot
from app.turn import Each

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


def hand_over(batch: list[Waiter], number: int, answered: Callable[[], None]) -> tuple[Each, Wanted]:
    """What the lane thread calls during `batch`: `each` passes a scored member to the event loop, which
    answers it at once (then calls `answered`); `wanted` says whether a member is still awaited (reading
    a future's state from the lane thread is safe: a done future stays done)."""
    loop = asyncio.get_running_loop()

    def answer(waiter: Waiter, ranking: Ranking, started: float, finished: float) -> None:
        if not waiter.future.done():
            waiter.future.set_result(Outcome(ranking, started - waiter.arrived, finished - started, len(batch), number))
            answered()

    def each(i: int, ranking: Ranking, started: float, finished: float) -> None:
        loop.call_soon_threadsafe(answer, batch[i], ranking, started, finished)

    def wanted(i: int) -> bool:
        return not batch[i].future.done()

    return each, wanted


def fail(waiter: Waiter, exc: BaseException, size: int) -> None:
    if not waiter.future.done():
        waiter.future.set_exception(InferenceFailed(f"Inference failed for this review (batch of {size}): {exc}"))


def resolve(batch: list[Waiter], result: LaneResult, number: int | None = None) -> None:
    """Each waiter still waiting gets its ranking, its own wait and the batch's inference time: the last member,
    and any whose answer `hand_over` has not delivered yet (the others were answered as they finished)."""
    for w, ranking in zip(batch, result.rankings, strict=True):
        if w.future.done():
            continue
        if ranking is None:  # left out because it looked gone: never leave a waiter hanging
            fail(w, RuntimeError("left out of its batch"), len(batch))
        else:
            w.future.set_result(Outcome(ranking, result.started_at - w.arrived, result.infer_s, len(batch), number))
