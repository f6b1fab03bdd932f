"""Pairs per model call, chosen by timing a few shapes on this host, cached beside the model.

Smaller onnxruntime calls can cost less per token than one big call, by an amount that depends
on the CPU (docs/model.md, "Call shape"), so the lab measures instead of guessing, the way
Triton's Model Analyzer picks a configuration: every candidate shape scores the same sample
reviews one at a time and as a ③ batch of 8, and the fastest for each is served. The timing
runs once per CPU model, model file (sha256) and thread count; later starts read the result
(app/engine/callshape_cache.py keeps it and settles the served shape). `LAB_PAIR_CHUNK` overrides it all.
"""

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from app.engine.model import CallShape, Ranking, Shape

log = logging.getLogger(__name__)

ONE, BATCH = "one review", "batch of 8"
CANDIDATES: dict[str, tuple[Shape, ...]] = {
    ONE: tuple(Shape(c, sort=True) for c in (4, 8, 12, 24)),
    # In order, 8 pairs per call is each review in three calls: no sorting across the batch.
    BATCH: (*(Shape(c, sort=True) for c in (4, 8, 12, 24)), Shape(8, sort=False)),
}


class Shapeable(Protocol):
    """A scorer whose call shape can be set: RerankerModel, or a fake in the tests."""

    call_shape: CallShape

    def score(self, texts: Sequence[str]) -> list[Ranking]: ...


@dataclass(frozen=True, slots=True)
class Trial:
    """One shape on one workload: its best round, in seconds per review."""

    workload: str
    shape: str
    chunk: int
    sort: bool
    seconds_per_review: float


@dataclass(frozen=True, slots=True)
class Choice:
    """The served shape and why: measured now, read from the cache, or set by LAB_PAIR_CHUNK."""

    shape: CallShape
    source: str  # measured | cached | LAB_PAIR_CHUNK
    key: dict[str, Any] = field(default_factory=dict)
    trials: tuple[Trial, ...] = ()
    measured_at: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "one_review": self.shape.single.label,
            "batch": self.shape.batch.label,
            "one_review_shape": {"chunk": self.shape.single.chunk, "sort": self.shape.single.sort},
            "batch_shape": {"chunk": self.shape.batch.chunk, "sort": self.shape.batch.sort},
            "source": self.source,
            "key": self.key,
            "measured_at": self.measured_at,
            "trials": [asdict(t) for t in self.trials],
        }


def workloads(samples_by_length: Sequence[str]) -> dict[str, list[list[str]]]:
    """One review: the lower-quartile, median and upper-quartile samples, a call each. Batch: 8 samples at
    evenly spaced lengths from the 10th to the 90th percentile in one call (a full ③ batch of typical
    reviews; the longest samples cost 5 s each and would make start-up minutes longer)."""
    texts, n = list(samples_by_length), len(samples_by_length)
    ones = [[texts[n // 4]], [texts[n // 2]], [texts[(3 * n) // 4]]]
    low, high = n // 10, (9 * n) // 10
    batch = [texts[low + round(i * (high - low) / 7)] for i in range(8)] if n > 1 else texts * 8
    return {ONE: ones, BATCH: [batch]}


def time_shapes(
    model: Shapeable,
    calls: dict[str, list[list[str]]],
    candidates: dict[str, tuple[Shape, ...]] = CANDIDATES,
    *,
    finalists: int = 3,
    clock: Callable[[], float] = time.process_time,
) -> list[Trial]:
    """Time every candidate once, then the `finalists` fastest of each workload again, so a slow moment
    on a shared host cannot crown a shape alone; a shape's cost is its best run (noise only adds time).
    The clock is this process's CPU time: on a host whose cores other work shares, wall time measured
    the neighbours (docs/model.md, "Call shape").
    Cheaper than two full rounds: start-up pays this once per host and model."""
    best: dict[tuple[str, Shape], float] = {}

    def run(workload: str, shape: Shape) -> None:
        texts = calls[workload]
        model.call_shape = CallShape(shape, shape)
        started = clock()
        for call in texts:
            model.score(call)
        seconds = (clock() - started) / sum(len(t) for t in texts)
        best[(workload, shape)] = min(seconds, best.get((workload, shape), seconds))
        log.info("call shape %s, %s: %.4f s per review", shape.label, workload, seconds)

    for workload in calls:
        for shape in candidates[workload]:
            run(workload, shape)
    for workload in calls:
        ranked = sorted(candidates[workload], key=lambda s: best[(workload, s)])
        for shape in ranked[:finalists]:
            run(workload, shape)
    return [Trial(w, s.label, s.chunk, s.sort, round(t, 5)) for (w, s), t in best.items()]


def fastest(trials: Sequence[Trial]) -> CallShape:
    """The cheapest shape per workload; a tie goes to the earlier candidate."""

    def pick(workload: str) -> Shape:
        mine = [t for t in trials if t.workload == workload]
        winner = min(mine, key=lambda t: t.seconds_per_review)
        return Shape(winner.chunk, winner.sort)

    return CallShape(single=pick(ONE), batch=pick(BATCH))


def measure(
    model: Shapeable,
    samples_by_length: Sequence[str],
    key: dict[str, Any],
    *,
    clock: Callable[[], float],
) -> Choice:
    calls = workloads(samples_by_length)
    count = sum(map(len, CANDIDATES.values()))
    log.warning("Timing %d call shapes on this host's CPU (once per CPU and model file)...", count)
    model.call_shape = CallShape.fixed(24)
    model.score(calls[ONE][0])  # the session's first call pays one-off setup: not timed
    trials = tuple(time_shapes(model, calls, clock=clock))
    return Choice(fastest(trials), "measured", key, trials, f"{datetime.now(UTC):%Y-%m-%dT%H:%M:%SZ}")
