"""Writes manifest.json: what a model folder holds, so the server can say which model it serves."""

import hashlib
import json
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tokenizers import Tokenizer


@dataclass(frozen=True, slots=True, kw_only=True)
class Identity:
    """Who the weights are: `Identity(name=..., source=..., weights="real", tokenizer=...)`."""

    name: str
    source: str
    weights: str  # "real" for the published checkpoint, "random" for twins and test models
    tokenizer: str  # where the tokenizer comes from; its vocabulary size is appended


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def architecture(checkpoint: Path) -> dict[str, int]:
    """The numbers that set size and latency, from the checkpoint's config.json."""
    config = json.loads((checkpoint / "config.json").read_text(encoding="utf-8"))
    return {
        "layers": config["num_hidden_layers"],
        "hidden": config["hidden_size"],
        "heads": config["num_attention_heads"],
        "ffn": config["intermediate_size"],
        "vocab": config["vocab_size"],
        "positions": config["max_position_embeddings"],
    }


def describe_tokenizer(folder: Path, description: str) -> str:
    """Where the tokenizer comes from and how many pieces it holds (what its memory depends on)."""
    return f"{description} ({Tokenizer.from_file(str(folder / 'tokenizer.json')).get_vocab_size()} tokens)"


def write_manifest(folder: Path, identity: Identity, *, checkpoint: Path, quantization: str) -> dict[str, Any]:
    """Describes folder/model.onnx and folder/tokenizer.json, built from `checkpoint`."""
    model = folder / "model.onnx"
    manifest: dict[str, Any] = {
        "name": identity.name,
        "source": identity.source,
        "weights": identity.weights,
        "quantization": quantization,
        "size_bytes": model.stat().st_size,
        "sha256": sha256(model),
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "config": architecture(checkpoint),
        "tokenizer": describe_tokenizer(folder, identity.tokenizer),
    }
    text = json.dumps(manifest, ensure_ascii=False, indent=2) + "\n"
    (folder / "manifest.json").write_text(text, encoding="utf-8")
    return manifest
