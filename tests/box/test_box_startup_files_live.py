"""A real box (the supervisor, the tiny model) whose start-up files are poisoned still starts once and answers
/health: the box restarts after a death, so a bad file read at start-up (a cached `"chunk": -1`, a knobs file
with a 401-digit integer, a FIFO for the cache) would otherwise kill, stop or hang every incarnation."""

import json
import os
import shutil
from pathlib import Path

import httpx
import pytest

from app.engine.callshape_cache import CACHE_NAME, host_key
from kit.live import TINY_MODEL
from tests.box.test_box_live import boxed
from tests.test_callshape_cache import good_cache

pytestmark = pytest.mark.slow


def model_copy(tmp_path: Path) -> Path:
    folder = tmp_path / "tiny"
    shutil.copytree(TINY_MODEL, folder, ignore=shutil.ignore_patterns(CACHE_NAME))  # the model, no measurement
    return folder


def test_a_poisoned_cache_and_knobs_file_cost_one_log_line_each_not_a_death(tmp_path: Path) -> None:
    model = model_copy(tmp_path)
    cache = good_cache() | {"key": host_key(model / "model.onnx", 1)}
    cache["trials"][0]["chunk"] = -1
    (model / CACHE_NAME).write_text(json.dumps(cache), encoding="utf-8")
    knobs = tmp_path / "knobs.json"
    knobs.write_bytes(b'{"limited_seats": ' + b"1" * 401 + b', "batch_max": 2.5, "queue_max_jobs": 30}')
    settings = {"LAB_MODEL_DIR": str(model), "LAB_KNOBS_FILE": str(knobs), "LAB_BOX_SECONDS_PER_REVIEW": "0"}
    with boxed(**settings) as box:
        stats = httpx.get(f"{box.url}/api/stats", timeout=30).json()
        shape = httpx.get(f"{box.url}/api/model", timeout=30).json()["call_shape"]
    log = box.log()
    assert stats["box"]["deaths"] == 0 and stats["knobs"]["values"]["queue_max_jobs"] == 30
    assert stats["knobs"]["values"]["limited_seats"] == 4 and stats["knobs"]["values"]["batch_max"] == 8
    assert shape["source"] == "measured" and "Ignoring the call-shape cache" in log
    assert "limited_seats is not a number (an integer of 401 digits)" in log
    assert "batch_max moves in steps of 1 (reviews) from 1: a whole number, not 2.5" in log
    assert "Traceback" not in log
    mended = json.loads((model / CACHE_NAME).read_text(encoding="utf-8"))
    assert all(t["chunk"] > 0 for t in mended["trials"])  # the next start reads a good one


def test_a_fifo_for_the_cache_neither_blocks_the_start_nor_the_stop(tmp_path: Path) -> None:
    model = model_copy(tmp_path)
    os.mkfifo(model / CACHE_NAME)
    with boxed(LAB_MODEL_DIR=str(model), LAB_BOX_SECONDS_PER_REVIEW="0") as box:
        assert httpx.get(f"{box.url}/health", timeout=30).status_code == 200
    assert box.process.returncode == 0  # stopped by SIGTERM, as asked
    assert (model / CACHE_NAME).is_file()
