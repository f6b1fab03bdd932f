"""Finds the real checkpoint: a local snapshot, the local hub cache, or a download that fails fast."""

import logging
from pathlib import Path

from huggingface_hub import HfApi, constants, snapshot_download
from huggingface_hub.errors import LocalEntryNotFoundError, RepositoryNotFoundError

from app.prepare import PrepareError

log = logging.getLogger(__name__)

HUB_ID = "BAAI/bge-reranker-base"
# What export needs: config, tokenizer and safetensors weights (not the .bin copy or onnx/).
FILES = ["*.json", "*.safetensors", "sentencepiece.bpe.model"]
# Enough for a real answer from huggingface.co; short enough that an offline box says so at once.
PROBE_TIMEOUT_S = 5.0


def resolve_source(source: str) -> Path:
    """A local folder holding the checkpoint named by `source` (a hub id or a snapshot folder)."""
    local = Path(source).expanduser()
    if local.is_dir():
        missing = [name for name in ("config.json", "tokenizer.json") if not (local / name).exists()]
        if missing:
            raise PrepareError(f"{local} is not a model snapshot: it lacks {', '.join(missing)}.")
        return local
    if source.startswith((".", "/", "~")) or source.count("/") != 1:
        raise PrepareError(f"{source} is neither a folder nor a hub id like {HUB_ID}.")
    try:
        return Path(snapshot_download(source, allow_patterns=FILES, local_files_only=True))
    except LocalEntryNotFoundError:
        pass  # not cached yet: ask the hub
    _probe_hub(source)
    log.info("downloading %s from the hub", source)
    return Path(snapshot_download(source, allow_patterns=FILES, etag_timeout=PROBE_TIMEOUT_S))


def _probe_hub(repo_id: str) -> None:
    """Raises at once, with what to do instead, when the hub cannot serve `repo_id`."""
    if constants.HF_HUB_OFFLINE:
        raise PrepareError(offline_help(repo_id, "HF_HUB_OFFLINE is set"))
    try:
        HfApi().model_info(repo_id, timeout=PROBE_TIMEOUT_S)
    except RepositoryNotFoundError as exc:
        raise PrepareError(f"{repo_id} is not a model on the hub (or needs a token).") from exc
    except OSError as exc:  # requests' connection errors and timeouts are OSErrors
        raise PrepareError(offline_help(repo_id, type(exc).__name__)) from exc


def offline_help(repo_id: str, reason: str) -> str:
    return (
        f"Could not get {repo_id}: the Hugging Face hub (huggingface.co) cannot be reached from this "
        f"machine ({reason}) and the model is not in the local hub cache. To use the real weights, "
        f"download a snapshot on a machine that can reach the hub with `huggingface-cli download "
        f"{repo_id} --local-dir X`, copy the folder X to this machine and run `just model` with "
        f"LAB_MODEL_SOURCE=X (or `python -m app.prepare real --source X`). Meanwhile `just twin` "
        f"builds the offline twin: the same architecture with random weights, the same size and speed."
    )
