"""Where a call's time goes, by operator, for each call shape: onnxruntime's own profiler, per real token.

Why do smaller calls cost less per token on some CPUs (docs/model.md, "Call shape")? Each
chunk size scores the same three sample reviews (the chooser's one-review workload) with
`SessionOptions.enable_profiling`; the trace's node events are summed by operator type and
divided by the real (unpadded) tokens, so padding shows as its own column and the rest is
the per-token cost of each kind of work (int8 matrix products, quantizing activations, attention,
element-wise ops). Pinned to one core like every benchmark. Writes docs/bench/callcost.{md,json}.
"""

import argparse
import json
import os
import tempfile
import time
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import onnxruntime as ort

from app.bench.bursts import machine, model_line
from app.bench.cores import affinity, bench_core, pin_here
from app.callshape import ONE, cpu_model, workloads
from app.model import CallShape, RerankerModel, load_topics
from app.settings import PROJECT_ROOT, TWIN_MODEL_DIR

CHUNKS = (4, 8, 12, 24)


def profiled(model: RerankerModel, chunk: int, calls: list[list[str]], repeats: int, scratch: Path) -> dict[str, Any]:
    """Score `calls` `repeats` times in `chunk`-pair calls under the profiler; the trace summed by operator type."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.enable_profiling = True
    options.profile_file_prefix = str(scratch / f"chunk{chunk}")
    model.session = ort.InferenceSession(
        str(model.model_dir / "model.onnx"), options, providers=["CPUExecutionProvider"]
    )
    model.call_shape = CallShape.fixed(chunk)
    model.score(calls[0])  # first-call setup, in the trace but not in the sums (filtered by run below)
    real = padded = 0
    started = time.perf_counter()
    for _ in range(repeats):
        for texts in calls:
            pairs = [(t.query, text) for text in texts for t in model.topics]
            lengths = sorted(len(e.ids) for e in model.tokenizer.encode_batch(pairs))
            real += sum(lengths)
            padded += sum(
                max(lengths[i : i + chunk]) * len(lengths[i : i + chunk]) for i in range(0, len(lengths), chunk)
            )
            model.score(texts)
    wall = time.perf_counter() - started
    trace = json.loads(Path(model.session.end_profiling()).read_text(encoding="utf-8"))
    by_op: dict[str, float] = defaultdict(float)
    runs = [e for e in trace if e.get("cat") == "Session" and e.get("name") == "model_run"]
    first_run_end = runs[0]["ts"] + runs[0]["dur"] if runs else 0
    for event in trace:
        if event.get("cat") == "Node" and event["name"].endswith("_kernel_time") and event["ts"] > first_run_end:
            by_op[event["args"]["op_name"]] += event["dur"] / 1e6
    return {"chunk": chunk, "real_tokens": real, "padded_tokens": padded, "wall_s": wall, "by_op_s": dict(by_op)}


def table(results: list[dict[str, Any]]) -> list[str]:
    """µs per real token by operator type, biggest first, one column per chunk size."""
    ops = sorted({op for r in results for op in r["by_op_s"]}, key=lambda op: -results[-1]["by_op_s"].get(op, 0.0))
    head = "| operator | " + " | ".join(f"{r['chunk']} pairs" for r in results) + " |"
    lines = [head, "|---|" + "---:|" * len(results)]
    for op in ops:
        cells = [f"{1e6 * r['by_op_s'].get(op, 0.0) / r['real_tokens']:.1f}" for r in results]
        lines.append(f"| {op} | " + " | ".join(cells) + " |")
    totals = [f"**{1e6 * sum(r['by_op_s'].values()) / r['real_tokens']:.1f}**" for r in results]
    lines.append("| all operators | " + " | ".join(totals) + " |")
    walls = [f"{1e6 * r['wall_s'] / r['real_tokens']:.1f}" for r in results]
    lines.append("| wall clock (with tokenizing, copying) | " + " | ".join(walls) + " |")
    pads = [f"{100 * (r['padded_tokens'] / r['real_tokens'] - 1):.1f} %" for r in results]
    lines.append("| padded tokens over real | " + " | ".join(pads) + " |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model-dir", type=Path, default=TWIN_MODEL_DIR)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--core", type=int, default=bench_core())
    parser.add_argument("--out", type=Path, default=PROJECT_ROOT / "docs" / "bench")
    args = parser.parse_args()
    pin_here(args.core)
    samples = json.loads((PROJECT_ROOT / "app" / "data" / "sample_reviews.json").read_text(encoding="utf-8"))
    calls = workloads(sorted((str(s["text"]) for s in samples), key=len))[ONE]
    model = RerankerModel(args.model_dir, load_topics(PROJECT_ROOT / "app" / "data" / "topics.json"))
    started, load = datetime.now(UTC), os.getloadavg()
    with tempfile.TemporaryDirectory() as scratch:
        results = []
        for chunk in CHUNKS:
            results.append(profiled(model, chunk, calls, args.repeats, Path(scratch)))
            print(json.dumps({k: v for k, v in results[-1].items() if k != "by_op_s"}), flush=True)
    end_load = os.getloadavg()
    header = (
        f"Measured {started:%Y-%m-%d %H:%M} UTC on {machine()} ({cpu_model()}), {affinity()}, one onnxruntime "
        f"thread; load average {load[0]:.1f} at the start, {end_load[0]:.1f} at the end (other helpers' tests "
        f"shared the machine); model: {model_line(args.model_dir)}; the three quartile sample reviews, "
        f"{args.repeats} times each per chunk size; onnxruntime {ort.__version__} profiler, kernel time "
        "per real (unpadded) token in µs."
    )
    lines = [header, "", *table(results)]
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "callcost.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (args.out / "callcost.json").write_text(json.dumps({"header": header, "results": results}, indent=1) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
