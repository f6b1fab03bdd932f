"""Where a call's time goes, by operator, for each call shape: onnxruntime's own profiler, per real token.

Why do smaller calls cost less per token on some CPUs (docs/model.md, "Call shape")? Each
chunk size scores the same three sample reviews (the chooser's one-review workload) in its
own profiled session (`SessionOptions.enable_profiling`), the sizes taking turns call by call.
The traces' node events are summed by operator type and divided by the real (unpadded)
tokens; the process's CPU time per token is the figure a busy shared host disturbs least.
Pinned to one core like every benchmark. Writes docs/bench/callcost.{md,json}.
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

from app.engine.callshape import ONE, cpu_model, workloads
from app.engine.model import CallShape, RerankerModel, load_topics
from app.settings import PROJECT_ROOT, TWIN_MODEL_DIR
from bench.bursts import machine, model_line
from bench.cores import affinity, bench_core, pin_here

CHUNKS = (4, 8, 12, 24)


def session(model_dir: Path, prefix: Path) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.enable_profiling = True
    options.profile_file_prefix = str(prefix)
    return ort.InferenceSession(str(model_dir / "model.onnx"), options, providers=["CPUExecutionProvider"])


def tokens(model: RerankerModel, texts: list[str], chunk: int) -> tuple[int, int]:
    """(real, padded) tokens of one `score` call in sorted `chunk`-pair calls."""
    pairs = [(t.query, text) for text in texts for t in model.topics]
    lengths = sorted(len(e.ids) for e in model.tokenizer.encode_batch(pairs))
    padded = sum(max(lengths[i : i + chunk]) * len(lengths[i : i + chunk]) for i in range(0, len(lengths), chunk))
    return sum(lengths), padded


def profiled(model: RerankerModel, calls: list[list[str]], repeats: int, scratch: Path) -> list[dict[str, Any]]:
    """Every chunk size has its own profiled session; they take turns call by call, so a busy moment on a
    shared host lands on all of them alike. Sums the traces by operator type; CPU time per chunk size too."""
    sessions = {chunk: session(model.model_dir, scratch / f"chunk{chunk}") for chunk in CHUNKS}
    totals = {chunk: {"real": 0, "padded": 0, "cpu": 0.0, "wall": 0.0} for chunk in CHUNKS}
    for chunk in CHUNKS:  # first-call setup: in the trace, left out of the sums below
        model.session, model.call_shape = sessions[chunk], CallShape.fixed(chunk)
        model.score(calls[0])
    for _ in range(repeats):
        for texts in calls:
            for chunk in CHUNKS:
                model.session, model.call_shape = sessions[chunk], CallShape.fixed(chunk)
                real, padded = tokens(model, texts, chunk)
                cpu, wall = time.process_time(), time.perf_counter()
                model.score(texts)
                totals[chunk]["cpu"] += time.process_time() - cpu
                totals[chunk]["wall"] += time.perf_counter() - wall
                totals[chunk]["real"] += real
                totals[chunk]["padded"] += padded
    results = []
    for chunk, sess in sessions.items():
        trace = json.loads(Path(sess.end_profiling()).read_text(encoding="utf-8"))
        runs = [e for e in trace if e.get("cat") == "Session" and e.get("name") == "model_run"]
        first_end = runs[0]["ts"] + runs[0]["dur"] if runs else 0
        by_op: dict[str, float] = defaultdict(float)
        for event in trace:
            if event.get("cat") == "Node" and event["name"].endswith("_kernel_time") and event["ts"] > first_end:
                by_op[event["args"]["op_name"]] += event["dur"] / 1e6
        t = totals[chunk]
        results.append(
            {
                "chunk": chunk,
                "real_tokens": t["real"],
                "padded_tokens": t["padded"],
                "cpu_s": t["cpu"],
                "wall_s": t["wall"],
                "by_op_s": dict(by_op),
            }
        )
    return results


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
    cpus = [f"**{1e6 * r['cpu_s'] / r['real_tokens']:.1f}**" for r in results]
    lines.append("| CPU time of the process | " + " | ".join(cpus) + " |")
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
        results = profiled(model, calls, args.repeats, Path(scratch))
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
