"""What ③'s batcher shows: why a batch goes, and its numbers for /api/stats and the metrics.

The batcher (batched.py) decides when a batch goes; the handover (handover.py) holds the batch's record
(each member and its reply) and carries it to the lane and back. The collector reads this module alone.
"""

from dataclasses import dataclass

from app.engine.tally import TallySnapshot

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
