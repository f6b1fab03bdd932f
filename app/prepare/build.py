"""Builds a model folder next to its destination and swaps it in whole, so none is ever half-written."""

import json
import logging
import tempfile
import time
from pathlib import Path
from typing import Any

from app.engine.model import RerankerModel, load_topics
from app.prepare.export import export_int8
from app.prepare.manifest import Identity, write_manifest
from app.settings import get_settings

log = logging.getLogger(__name__)


def build_model_folder(checkpoint: Path, out: Path, identity: Identity) -> dict[str, Any]:
    """model.onnx + tokenizer.json + manifest.json from a checkpoint folder into `out`."""
    out.parent.mkdir(parents=True, exist_ok=True)
    # The staging folder sits beside `out` so the final rename stays on one filesystem.
    with tempfile.TemporaryDirectory(prefix=f".{out.name}-", dir=out.parent) as tmp:
        staging = Path(tmp) / out.name
        quantization = export_int8(checkpoint, staging)
        manifest = write_manifest(staging, identity, checkpoint=checkpoint, quantization=quantization)
        smoke_test(staging)
        _swap_in(staging, out, Path(tmp) / "previous")
    log.info("wrote %s (%.1f MB)", out, manifest["size_bytes"] / 1e6)
    return manifest


def _swap_in(staging: Path, out: Path, trash: Path) -> None:
    """Replaces `out` with `staging`; the old folder goes to `trash`, deleted with it."""
    if out.exists():
        out.rename(trash)
    staging.rename(out)


def smoke_test(folder: Path) -> None:
    """Loads the folder the way the server does and scores one sample review."""
    settings = get_settings()
    topics = load_topics(settings.topics_file)
    samples = json.loads(settings.samples_file.read_text(encoding="utf-8"))
    model = RerankerModel(folder, topics, intra_op_threads=1)
    text = samples[0]["text"]
    started = time.perf_counter()
    (ranking,) = model.score([text])
    elapsed = time.perf_counter() - started
    if len(ranking) != len(topics):
        raise RuntimeError(f"{folder} scored {len(ranking)} topics, expected {len(topics)}")
    log.info("smoke test: %d topics scored in %.3f s (first call, one thread)", len(ranking), elapsed)
