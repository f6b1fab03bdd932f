"""The benchmark's second peer: Infinity (infinity-emb, optimum/onnx engine) on the lab's own model file.

Started by `bench.peer` as `INFINITY_PYTHON -m bench.peer_infinity PORT MODEL_DIR SCRATCH`
with the Python of the extra `infinity` (its own venv: infinity-emb pins numpy<2 and uvicorn<0.33,
which must not change the lab's). Imports only the standard library, onnxruntime and Infinity.

Fair to both, by construction:
- the same model bytes: SCRATCH holds an HF-style folder whose `model.onnx` is a symlink to the
  lab's (same sha256), with the lab's tokenizer.json and an XLM-RoBERTa config from its manifest;
- Infinity's graph optimizer is off (`--onnx-disable-optimize`): it would rewrite the graph;
- one onnxruntime thread: optimum builds its session without options, so every session made in
  this process gets intra/inter-op threads 1 (the lab's setting), checked and printed at load;
- `--batch-size 8`: Infinity packs up to 8 (query, document) pairs per call, sorted by length.
Known failures, worked around or handled by the bench instead of hidden (docs/benchmarks.md): Infinity's warm-up
tokenizes to `max_position_embeddings` (514) and fails on a model with 512 usable positions, so
it starts with `--no-model-warmup` and the bench warms it with one request; a request longer
than 512 tokens kills its inference thread while /health stays 200 (the bench probes for that).
"""

import json
import os
import sys
from pathlib import Path
from typing import Any

import onnxruntime as ort


def hf_folder(model_dir: Path, into: Path) -> Path:
    """A folder optimum's ORTModelForSequenceClassification and AutoTokenizer load, on the lab's bytes."""
    manifest = json.loads((model_dir / "manifest.json").read_text(encoding="utf-8"))
    shape = manifest["config"]
    into.mkdir(parents=True, exist_ok=True)
    for name in ("model.onnx", "tokenizer.json"):
        link = into / name
        if not link.exists():
            link.symlink_to((model_dir / name).resolve())
    config = {
        "architectures": ["XLMRobertaForSequenceClassification"],
        "model_type": "xlm-roberta",
        "num_hidden_layers": shape["layers"],
        "hidden_size": shape["hidden"],
        "num_attention_heads": shape["heads"],
        "intermediate_size": shape["ffn"],
        "vocab_size": shape["vocab"],
        "max_position_embeddings": shape["positions"],
        "type_vocab_size": 1,
        "pad_token_id": 1,
        "bos_token_id": 0,
        "eos_token_id": 2,
        "num_labels": 1,
        "id2label": {"0": "LABEL_0"},
        "label2id": {"LABEL_0": 0},
    }
    (into / "config.json").write_text(json.dumps(config, indent=1), encoding="utf-8")
    tokenizer = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "model_max_length": 512,
        "bos_token": "<s>",
        "eos_token": "</s>",
        "cls_token": "<s>",
        "sep_token": "</s>",
        "pad_token": "<pad>",
        "unk_token": "<unk>",
        "mask_token": "<mask>",
    }
    (into / "tokenizer_config.json").write_text(json.dumps(tokenizer, indent=1), encoding="utf-8")
    return into


class OneThreadSession(ort.InferenceSession):  # type: ignore[misc]
    """Every session in this process runs on one intra-op and one inter-op thread, like the lab's."""

    def __init__(self, path: Any, sess_options: Any = None, *args: Any, **kwargs: Any) -> None:
        options = sess_options if sess_options is not None else ort.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        super().__init__(path, options, *args, **kwargs)
        print(f"peer_infinity: onnxruntime session on {path}, intra/inter-op threads 1/1", flush=True)


def main() -> None:
    port, model_dir, scratch = int(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
    folder = hf_folder(model_dir, scratch / "infinity-model")
    os.environ["DO_NOT_TRACK"] = "1"  # Infinity reports usage to PostHog otherwise (retries offline)
    ort.InferenceSession = OneThreadSession  # before optimum builds its session
    # Only in Infinity's venv, after the patch above.
    import infinity_emb.transformer.crossencoder.optimum as crossencoder
    from infinity_emb.cli import cli

    # Infinity 0.0.78 passes optimum the ONNX file's full path; optimum-onnx 0.1 wants the name
    # inside the folder ("Could not find any ONNX files with target file name /tmp/.../model.onnx").
    found = crossencoder.get_onnx_files
    crossencoder.get_onnx_files = lambda **kwargs: Path(found(**kwargs).name)

    sys.argv = [
        "infinity_emb",
        "v2",
        *("--model-id", str(folder), "--served-model-name", "twin", "--engine", "optimum", "--device", "cpu"),
        *("--batch-size", "8", "--onnx-disable-optimize", "--no-model-warmup"),
        *("--host", "127.0.0.1", "--port", str(port), "--log-level", "warning"),
    ]
    cli()


if __name__ == "__main__":
    main()
