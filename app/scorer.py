"""Builds the scorer the lab serves: the model, its call shape chosen on this host, the box's speed.

Apart from the lab's assembly (app/lab.py) because this is what a start-up spends its minutes on:
timing call shapes once per host and model, then calibrating the box to its target cost.
"""

import asyncio
import json
import logging
import time
from pathlib import Path
from typing import Any

from app.engine.callshape_cache import CACHE_NAME, host_key, settle_call_shape
from app.engine.clock import ServiceClock
from app.engine.model import RerankerModel, Scorer, load_topics
from app.inside.calibrate import slow_to_target, write_quota
from app.inside.speed import SpeedLoop
from app.settings import BoxState, Settings

log = logging.getLogger(__name__)


def load_scorer(settings: Settings) -> tuple[Scorer, dict[str, Any], SpeedLoop | None]:
    model_dir = settings.resolved_model_dir()
    model = RerankerModel(
        model_dir,
        load_topics(settings.topics_file),
        intra_op_threads=settings.intra_op_threads,
        max_tokens=settings.max_tokens,
        memory=settings.memory_arena,
    )
    manifest = dict(model.manifest)
    slow = settings.box_slow and settings.box_seconds_per_review > 0
    state = settings.box_state or BoxState()
    if slow and state.cpu_quota_dir is not None:
        write_quota(Path(state.cpu_quota_dir), None)  # shapes are timed at the host's speed, as the calibration is
    choice = settle_call_shape(
        model,
        samples_by_length(settings),
        key=lambda: host_key(model_dir / "model.onnx", settings.intra_op_threads),
        cache_file=model_dir / CACHE_NAME,
        override=settings.pair_chunk,
    )
    manifest["call_shape"] = choice.as_dict()
    scorer: Scorer = model  # the calibration below times this scorer: the shape actually served
    speed: SpeedLoop | None = None
    if slow:
        target, text = settings.box_seconds_per_review, warmup_text(settings)
        scorer, calibration, speed = slow_to_target(model, text, target, state.cpu_quota_dir, state.speed_file)
        manifest["box_calibration"] = calibration.as_dict()
    if manifest.get("weights") != "real":
        log.warning(
            "Serving %s with RANDOM weights: the load is real, the topic scores are meaningless. "
            "See docs/model.md, 'Real weights'.",
            model_dir,
        )
    return scorer, manifest, speed


def samples_by_length(settings: Settings) -> list[str]:
    samples = json.loads(settings.samples_file.read_text(encoding="utf-8"))
    return sorted((str(s["text"]) for s in samples), key=len)


def warmup_text(settings: Settings) -> str:
    """A sample review of median length: the service clock starts from what a typical review costs.

    Cost grows with length; warming up on the shortest sample made the first ETAs and
    Retry-After hints about half of the truth (measured in docs/bench/overload.md).
    """
    samples = samples_by_length(settings)
    return samples[len(samples) // 2]


async def calibrate_length(scorer: Scorer, clock: ServiceClock, settings: Settings) -> None:
    """Seed the length fit with the shortest, longest, median and lower-quartile samples, so the
    first ETAs already know long from short. Timed straight on the scorer (nothing else runs yet),
    so the per-review average keeps starting from the median review alone."""
    samples = samples_by_length(settings)
    for text in (samples[0], samples[-1], samples[len(samples) // 2], samples[len(samples) // 4]):
        started = time.perf_counter()
        await asyncio.to_thread(scorer.score, [text])
        clock.length.observe(time.perf_counter() - started, 1, len(text))
