"""Exports a checkpoint folder to ONNX and quantizes it to int8: the one path every model takes."""

import logging
import shutil
import tempfile
from pathlib import Path

from optimum.exporters.onnx import main_export
from optimum.onnxruntime import ORTQuantizer
from optimum.onnxruntime.configuration import AutoQuantizationConfig, QuantizationConfig

log = logging.getLogger(__name__)

# Dynamic: activations change with every text and there is no calibration set, so their
# ranges are measured on each call. The avx512_vnni preset (signed int8 weights) rather than
# avx2 (unsigned): onnxruntime's u8s8 kernels are its fast path on any x86-64 CPU, VNNI or not;
# on an AVX2-only EPYC, 24 pairs of ~40 tokens took 1.7 s of CPU against 2.0 s. Without VNNI
# those kernels can saturate int16 sums; onnxruntime says this rarely costs accuracy, and
# the avx2 preset is the fallback if real-weight scores ever look off on such a CPU.
# Per channel: one scale per output column, so one outlier column does not coarsen the rest;
# it measured the same size and speed as one scale per tensor.
QUANTIZATION: QuantizationConfig = AutoQuantizationConfig.avx512_vnni(is_static=False, per_channel=True)
DESCRIPTION = "dynamic int8 (onnxruntime via optimum: avx512_vnni preset, int8 weights per channel, MatMul and Gather)"


def export_int8(checkpoint: Path, folder: Path) -> str:
    """Writes folder/model.onnx (int8) and folder/tokenizer.json; returns how it was quantized.

    The graph takes input_ids and attention_mask and returns logits of shape (N, 1), which
    is what app.engine.model.RerankerModel feeds and reads.
    """
    with tempfile.TemporaryDirectory(prefix="lab-export-") as work:
        fp32, int8 = Path(work) / "fp32", Path(work) / "int8"
        log.info("exporting %s to ONNX", checkpoint)
        main_export(
            str(checkpoint),
            output=fp32,
            task="text-classification",
            library_name="transformers",
            local_files_only=True,
        )
        log.info("quantizing (%s)", DESCRIPTION)
        quantizer = ORTQuantizer.from_pretrained(fp32, file_name="model.onnx")
        quantizer.quantize(QUANTIZATION, save_dir=int8, file_suffix="")
        folder.mkdir(parents=True, exist_ok=True)
        shutil.move(int8 / "model.onnx", folder / "model.onnx")
        shutil.copyfile(fp32 / "tokenizer.json", folder / "tokenizer.json")
    return DESCRIPTION
