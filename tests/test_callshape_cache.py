"""A call-shape cache that is not one this code wrote is measured again and overwritten, never served and never
kept to fail the next start (a cached `"chunk": -1` or `"8"` would exit 3 at every start, and a box restart forever)."""

import json
import logging
import os
import shutil
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest

from app.engine.callshape import BATCH, CANDIDATES, ONE, Trial
from app.engine.callshape_cache import CACHE_NAME, host_key, read_cache, settle_call_shape
from app.engine.model import Shape
from app.scorer import load_scorer
from app.settings import Settings
from kit.live import TINY_MODEL
from tests.test_callshape import SAMPLES, FakeClock, TimedFake, costs, key_for

KEY = key_for("cpu")


def good_cache() -> dict[str, Any]:
    shapes = [(w, i, s) for w, candidates in CANDIDATES.items() for i, s in enumerate(candidates)]
    trials = [Trial(w, s.label, s.chunk, s.sort, 0.5 + i / 100) for w, i, s in shapes]
    return {"key": KEY, "measured_at": "2026-12-02T10:00:00Z", "trials": [asdict(t) for t in trials]}


def with_first_trial(**changes: Any) -> dict[str, Any]:
    cache = good_cache()
    cache["trials"][0] |= changes
    return cache


def test_a_cache_as_this_code_writes_it_is_served(tmp_path: Path) -> None:
    write(tmp_path / CACHE_NAME, good_cache())
    choice = read_cache(tmp_path / CACHE_NAME, KEY)
    assert choice is not None and choice.source == "cached" and choice.measured_at == "2026-12-02T10:00:00Z"
    assert choice.shape.single == CANDIDATES[ONE][0] and choice.shape.batch == CANDIDATES[BATCH][0]  # the cheapest


BAD_CACHES: dict[str, Any] = {
    "chunk -1": with_first_trial(chunk=-1),
    "chunk as a string": with_first_trial(chunk="8"),
    "chunk as a float": with_first_trial(chunk=8.0),
    "chunk not a candidate": with_first_trial(chunk=5),
    "chunk a bool": with_first_trial(chunk=True),
    "sort as 1": with_first_trial(sort=1),
    "sort as a string": with_first_trial(sort="true"),
    "negative seconds": with_first_trial(seconds_per_review=-0.5),
    "zero seconds": with_first_trial(seconds_per_review=0),
    "seconds as a string": with_first_trial(seconds_per_review="0.1"),
    "unknown workload": with_first_trial(workload="batch of 9"),
    "workload as a list": with_first_trial(workload=[ONE]),
    "an extra field": with_first_trial(extra=1),
    "a missing field": {**good_cache(), "trials": [{"workload": ONE}]},
    "no batch trial": {**good_cache(), "trials": [t for t in good_cache()["trials"] if t["workload"] == ONE]},
    "no trials": {**good_cache(), "trials": []},
    "trials an object": {**good_cache(), "trials": {"a": 1}},
    "a trial a list": {**good_cache(), "trials": [[ONE, "4 pairs", 4, True, 0.5]]},
    "measured_at a number": {**good_cache(), "measured_at": 2026},
}


def write(file: Path, value: Any) -> None:
    file.write_text(json.dumps(value), encoding="utf-8")


@pytest.mark.parametrize("name", list(BAD_CACHES))
def test_a_cache_with_a_wrong_value_is_measured_again_and_overwritten(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, name: str
) -> None:
    cache = tmp_path / CACHE_NAME
    write(cache, BAD_CACHES[name])
    clock = FakeClock()
    fake = TimedFake(clock, costs(Shape(8, True), Shape(12, True)))
    with caplog.at_level(logging.WARNING):
        choice = settle_call_shape(fake, SAMPLES, key=lambda: KEY, cache_file=cache, clock=clock)
    assert choice.source == "measured" and fake.calls > 0
    assert [r.getMessage() for r in caplog.records if "Ignoring the call-shape cache" in r.getMessage()]
    again = read_cache(cache, KEY)
    assert again is not None and again.shape == choice.shape  # rewritten: the next start reads it


@pytest.mark.parametrize(
    "content",
    [
        b"",
        bytes(range(256)),
        b'{"key": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
        b'{"key": ' + b"[" * 3000 + b"]" * 3000 + b"}",
        b"[" + json.dumps(good_cache()).encode() + b"]",
        json.dumps(good_cache()).replace('"chunk": 4', '"chunk": ' + "4" * 401, 1).encode(),
        json.dumps(good_cache()).replace('"seconds_per_review": 0.5', '"seconds_per_review": NaN', 1).encode(),
        json.dumps(good_cache()).replace('"seconds_per_review": 0.5', '"seconds_per_review": 1e999', 1).encode(),
    ],
)
def test_a_cache_that_is_not_json_of_the_right_shape_is_measured_again(tmp_path: Path, content: bytes) -> None:
    cache = tmp_path / CACHE_NAME
    cache.write_bytes(content)
    clock = FakeClock()
    fake = TimedFake(clock, costs(Shape(8, True), Shape(12, True)))
    assert settle_call_shape(fake, SAMPLES, key=lambda: KEY, cache_file=cache, clock=clock).source == "measured"
    assert read_cache(cache, KEY) is not None


@pytest.mark.parametrize("kind", ["fifo", "dev_zero", "ten_megabytes", "directory"])
def test_a_cache_that_is_no_file_never_blocks_or_fails_the_start(tmp_path: Path, kind: str) -> None:
    """The cache is read at start-up: a FIFO, an endless device, a huge file or a folder in its place must cost a
    measurement, never a start that hangs (and ignores SIGTERM) or fails."""
    cache = tmp_path / CACHE_NAME
    if kind == "fifo":
        os.mkfifo(cache)
    elif kind == "dev_zero":
        cache.symlink_to("/dev/zero")
    elif kind == "ten_megabytes":
        cache.write_bytes(b" " * (10 * 10**6))
    else:
        cache.mkdir()
    clock = FakeClock()
    fake = TimedFake(clock, costs(Shape(8, True), Shape(12, True)))
    assert settle_call_shape(fake, SAMPLES, key=lambda: KEY, cache_file=cache, clock=clock).source == "measured"
    if kind != "directory":  # a directory cannot be replaced: every start measures again, and says so
        assert cache.is_file() and not cache.is_symlink() and read_cache(cache, KEY) is not None


def test_a_cached_chunk_of_minus_one_never_reaches_the_real_model(tmp_path: Path) -> None:
    """The tiny model with the cache poisoned for its very key: it loads, scores, and the cache is mended."""
    model_dir = tmp_path / "tiny"
    shutil.copytree(TINY_MODEL, model_dir)
    cache = good_cache() | {"key": host_key(model_dir / "model.onnx", 1)}
    for trial in cache["trials"]:
        trial["chunk"] = -1
    write(model_dir / CACHE_NAME, cache)
    scorer, manifest, _ = load_scorer(Settings(model_dir=model_dir, warmup=False))
    assert manifest["call_shape"]["source"] == "measured"
    assert len(scorer.score(["빵이 맛있어요"])[0]) > 0
    mended = json.loads((model_dir / CACHE_NAME).read_text(encoding="utf-8"))
    assert all(t["chunk"] > 0 for t in mended["trials"])
