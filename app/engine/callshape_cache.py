"""The call shape's record per host: what a measurement depends on (this CPU, the model file, the thread
count, the candidates), the cache file beside the model, and settling the served shape from the override,
the cache or a measurement now (app/engine/callshape.py times the shapes).

A start-up pays the timing once per host and model; later starts read the result, and a cache this code
would not have written is ignored in one line and measured again.
"""

import hashlib
import json
import logging
import os
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from app.datafile import Unreadable, is_number, read_json
from app.engine.callshape import CANDIDATES, Choice, Shapeable, Trial, fastest, measure
from app.engine.model import CallShape, Shape
from app.host import cpu_model as cpu_model  # the key's CPU, shared with the stand-in's cache

log = logging.getLogger(__name__)

CACHE_NAME = "call-shape.json"
CACHE_MAX_BYTES = 64 * 1024  # a measurement is about 2 KB


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
