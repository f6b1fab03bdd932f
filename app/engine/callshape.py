"""Pairs per model call, chosen by timing a few shapes on this host, cached beside the model.

Smaller onnxruntime calls can cost less per token than one big call, by an amount that depends
on the CPU (docs/model.md, "Call shape"), so the lab measures instead of guessing, the way
Triton's Model Analyzer picks a configuration: every candidate shape scores the same sample
reviews one at a time and as a ③ batch of 8, and the fastest for each is served. The timing
runs once per CPU model, model file (sha256) and thread count; later starts read the result.
`LAB_PAIR_CHUNK` overrides it all.
"""

import contextlib
import hashlib
import json
import logging
import os
import platform
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from app.datafile import Unreadable, is_number, read_json
from app.engine.model import CallShape, Ranking, Shape

log = logging.getLogger(__name__)

ONE, BATCH = "one review", "batch of 8"
CANDIDATES: dict[str, tuple[Shape, ...]] = {
    ONE: tuple(Shape(c, sort=True) for c in (4, 8, 12, 24)),
    # In order, 8 pairs per call is each review in three calls: no sorting across the batch.
    BATCH: (*(Shape(c, sort=True) for c in (4, 8, 12, 24)), Shape(8, sort=False)),
}
CACHE_NAME = "call-shape.json"
CACHE_MAX_BYTES = 64 * 1024  # a measurement is about 2 KB


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


def cpu_model() -> str:
    """The CPU's model name (/proc/cpuinfo on Linux), else what the platform says."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def host_key(model_file: Path, threads: int, cpu: str | None = None) -> dict[str, Any]:
    """What the measurement depends on: a different CPU, model, thread count or candidate list measures again."""
    return {
        "cpu": cpu_model() if cpu is None else cpu,
        "model_sha256": file_sha256(model_file),
        "threads": threads,
        "candidates": {w: [s.label for s in shapes] for w, shapes in CANDIDATES.items()},
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


def read_cache(path: Path, key: dict[str, Any]) -> Choice | None:
    """The cached choice if it was measured for this very key; None if absent, stale or not a measurement
    this code would have written (said in one line): the caller then measures again and overwrites it."""
    try:
        data = read_json(path, CACHE_MAX_BYTES)
        if not isinstance(data, dict) or data.get("key") != key:
            return None
        trials = tuple(map(cached_trial, data["trials"] if isinstance(data.get("trials"), list) else [None]))
        if {t.workload for t in trials} != set(CANDIDATES) or not isinstance(data.get("measured_at"), str | None):
            raise Unreadable("a workload without a trial, or measured_at not a string")
        return Choice(fastest(trials), "cached", key, trials, data.get("measured_at"))
    except FileNotFoundError:
        return None
    except Unreadable as exc:
        log.warning("Ignoring the call-shape cache %s (%s): measuring again.", path, exc)
        return None


def cached_trial(entry: Any) -> Trial:
    """One trial as `write_cache` writes it, else Unreadable: its chunk and sort one of its workload's
    candidates, its cost a positive number (anything else would be served, or fail the first inference)."""
    try:
        trial = Trial(**entry)
    except TypeError:
        raise Unreadable("a trial is not an object with exactly a trial's fields") from None
    typed = isinstance(trial.workload, str) and type(trial.chunk) is int and type(trial.sort) is bool
    if not typed or Shape(trial.chunk, trial.sort) not in CANDIDATES.get(trial.workload, ()):
        raise Unreadable(f"chunk {str(trial.chunk)[:20]}, sort {str(trial.sort)[:20]} is not a candidate shape")
    if not is_number(trial.seconds_per_review) or trial.seconds_per_review <= 0:
        raise Unreadable(f"seconds_per_review {str(trial.seconds_per_review)[:20]} is not a positive number")
    label, seconds = Shape(trial.chunk, trial.sort).label, float(trial.seconds_per_review)
    return replace(trial, shape=label, seconds_per_review=seconds)


def write_cache(path: Path, choice: Choice) -> None:
    """Atomically (several servers may start at once); a read-only model folder only costs a re-measure."""
    payload = {"key": choice.key, "measured_at": choice.measured_at, "trials": [asdict(t) for t in choice.trials]}
    try:
        with tempfile.NamedTemporaryFile("w", dir=path.parent, suffix=".tmp", delete=False, encoding="utf-8") as f:
            json.dump(payload, f, indent=1, ensure_ascii=False)
        os.replace(f.name, path)
    except OSError as error:
        log.warning("Could not cache the call shape in %s (%s): the next start measures again.", path, error)


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


def settle_call_shape(
    model: Shapeable,
    samples_by_length: Sequence[str],
    *,
    key: Callable[[], dict[str, Any]],
    cache_file: Path | None,
    override: int | None = None,
    clock: Callable[[], float] = time.process_time,
) -> Choice:
    """Set `model.call_shape` from the override, the cache, or a measurement now (then cached).

    `key` is called only without an override: hashing a 279 MB model takes about a second."""
    if override is not None:
        choice = Choice(CallShape.fixed(override), "LAB_PAIR_CHUNK")
    else:
        known = key()
        cached = read_cache(cache_file, known) if cache_file is not None else None
        choice = cached or measure(model, samples_by_length, known, clock=clock)
        if cached is None and cache_file is not None:
            write_cache(cache_file, choice)
    model.call_shape = choice.shape
    single, batch = choice.shape.single.label, choice.shape.batch.label
    log.warning("Call shape (%s): one review in %s per call, a batch in %s.", choice.source, single, batch)
    return choice
