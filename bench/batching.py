"""Where does batching pay? Two models on the same CPU thread, measured in-process.

A pool of 8 sample reviews spread evenly over the samples' lengths; for batch size n, the 8
cyclic windows of n reviews from it are scored one `score` call each, so every n sees each
review exactly n times: the same length mix, only the batch size changes. Curves, each model in
the call shape the lab serves for it on this host (app/engine/callshape.py), n = 1..8:

- the twin (what the box serves): its arithmetic per review dominates, so a is small;
- the tiny test model (2 layers, hidden 64: about a thousandth of the twin's arithmetic per
  token), the one case on this CPU where a fixed cost per call could dominate, if one exists;
- with --padded, the twin with the whole batch padded to its longest pair (a naive batcher), n = 2, 4, 8.

Fits seconds per call ≈ a + b·n with a, b ≥ 0. Also times the median-length sample review alone
on the twin (median of 5 calls): the page scales every value by the box's speed now over this
(`/api/model` → box.speed), so the figure shows the box's seconds. Pins itself to one core (the
last this process may use, `--core` to choose). Writes the curves the page draws
(static/batching-curve.json) and a table (docs/bench/batching.md).
"""

import argparse
import json
import os
import statistics
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from app.engine.callshape_cache import CACHE_NAME, cpu_model, host_key, settle_call_shape
from app.engine.model import CallShape, RerankerModel, load_topics
from app.settings import PROJECT_ROOT, TWIN_MODEL_DIR
from kit.cores import affinity, bench_core, pin_here
from kit.host import host_ko, machine, model_line

TOPICS = PROJECT_ROOT / "app" / "data" / "topics.json"
TINY_MODEL_DIR = PROJECT_ROOT / "tests" / "assets" / "tiny-reranker"
SERVED_SIZES, PADDED_SIZES = tuple(range(1, 9)), (2, 4, 8)
POOL = 8
REFERENCE_CALLS = 5


def samples_by_length() -> list[str]:
    samples = json.loads((PROJECT_ROOT / "app" / "data" / "sample_reviews.json").read_text(encoding="utf-8"))
    return sorted((str(s["text"]) for s in samples), key=len)


def spread_reviews(count: int) -> list[str]:
    """`count` samples at evenly spaced length quantiles, shuffled so neighbours differ in length."""
    texts = samples_by_length()
    picked = [texts[round(i * (len(texts) - 1) / (count - 1))] for i in range(count)]
    return [picked[(i * 3) % count] for i in range(count)]  # 3 is coprime with 8: a fixed mix of short and long


def batch_seconds(model: RerankerModel, pool: list[str], n: int) -> float:
    """Mean wall time of one `score` call over the pool's cyclic windows of n reviews."""
    total = 0.0
    for start in range(len(pool)):
        window = [pool[(start + k) % len(pool)] for k in range(n)]
        started = time.perf_counter()
        model.score(window)
        total += time.perf_counter() - started
    return total / len(pool)


def fit_line(sizes: list[int], seconds: list[float]) -> dict[str, float]:
    """Least squares seconds ≈ a + b·n with a, b ≥ 0, and R² so a bad fit shows.

    A negative coefficient is no cost at all (padding makes a big batch cost more than linearly, and
    plain least squares then answers a < 0): it is clamped to 0 and the other refitted, an exact
    non-negative least squares for two coefficients.
    """
    n, s = np.asarray(sizes, dtype=float), np.asarray(seconds, dtype=float)
    b, a = (float(v) for v in np.polyfit(n, s, 1))
    if a < 0:
        a, b = 0.0, float(n @ s / (n @ n))
    if b < 0:
        a, b = float(s.mean()), 0.0
    residual = float(((s - (a + b * n)) ** 2).sum())
    spread = float(((s - s.mean()) ** 2).sum())
    return {"a_s": round(a, 4), "b_s": round(b, 4), "r2": round(1 - residual / spread, 4) if spread else 1.0}


def served_model(model_dir: Path, cache_dir: Path | None) -> RerankerModel:
    """The model in the call shape the lab serves for it here (measured once and cached, as `just serve` does)."""
    model = RerankerModel(model_dir, load_topics(TOPICS), intra_op_threads=1)
    override = os.environ.get("LAB_PAIR_CHUNK")
    settle_call_shape(
        model,
        samples_by_length(),
        key=lambda: host_key(model_dir / "model.onnx", 1),
        cache_file=(cache_dir or model_dir) / (CACHE_NAME if cache_dir is None else f"{model_dir.name}.json"),
        override=int(override) if override else None,
    )
    return model


def reference_review(model: RerankerModel) -> dict[str, Any]:
    """The median-length sample alone, median of a few calls: what the box's speed loop holds at its target."""
    texts = samples_by_length()
    median = texts[len(texts) // 2]
    model.score([median])
    costs = []
    for _ in range(REFERENCE_CALLS):
        started = time.perf_counter()
        model.score([median])
        costs.append(time.perf_counter() - started)
    seconds = round(statistics.median(costs), 4)
    return {"tokens": model.count_tokens(median), "calls": REFERENCE_CALLS, "seconds": seconds}


def curve(name: str, model: RerankerModel, texts: list[str], sizes: tuple[int, ...]) -> dict[str, Any]:
    model.score(texts[:2])  # warm-up: the first call in a shape pays one-off setup
    seconds = []
    for n in sizes:
        seconds.append(batch_seconds(model, texts, n))
        print(f"{name:5} {model.call_shape.batch.label:22} batch {n}: {seconds[-1]:.4f} s", flush=True)
    shape = model.call_shape
    tokens = [model.count_tokens(t) for t in texts]
    return {
        "model": name,
        "model_line": model_line(model.model_dir),
        "packing": f"served: one review in {shape.single.label}, a batch in {shape.batch.label} per call"
        if shape.batch.chunk
        else "whole batch padded",
        "chunk_pairs": shape.batch.chunk,
        "tokens": [min(tokens), max(tokens)],
        "points": [
            {"n": n, "seconds": round(s, 4), "per_review_s": round(s / n, 4)}
            for n, s in zip(sizes, seconds, strict=True)
        ],
        "fit": fit_line(list(sizes), [round(s, 4) for s in seconds]),  # the points as written: anyone can refit them
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model-dir", type=Path, default=TWIN_MODEL_DIR)
    parser.add_argument("--tiny-model-dir", type=Path, default=TINY_MODEL_DIR)
    parser.add_argument("--curve", type=Path, default=PROJECT_ROOT / "static" / "batching-curve.json")
    parser.add_argument("--out", type=Path, default=PROJECT_ROOT / "docs" / "bench" / "batching.md")
    parser.add_argument("--core", type=int, default=bench_core(), help="the one CPU to time on (default: the last)")
    parser.add_argument("--padded", action="store_true", help="also the twin padded to its longest pair (~4 min)")
    parser.add_argument("--shape-cache", type=Path, help="call-shape caches' folder (default: beside each model)")
    args = parser.parse_args()
    pin_here(args.core)
    if args.shape_cache:
        args.shape_cache.mkdir(parents=True, exist_ok=True)

    texts = spread_reviews(POOL)
    started, load = datetime.now(UTC), os.getloadavg()
    twin = served_model(args.model_dir, args.shape_cache)
    reference = reference_review(twin)
    curves = [curve("twin", twin, texts, SERVED_SIZES)]
    curves.append(curve("tiny", served_model(args.tiny_model_dir, args.shape_cache), texts, SERVED_SIZES))
    if args.padded:
        twin.call_shape = CallShape.fixed(0)
        curves.append(curve("twin", twin, texts, PADDED_SIZES))
    ended, load_end = datetime.now(UTC), os.getloadavg()

    measured = (
        f"{started:%Y-%m-%d %H:%M}–{ended:%H:%M} UTC on {machine()}, {cpu_model()}, {affinity()}, one onnxruntime "
        f"thread, load average {'/'.join(f'{v:.1f}' for v in load)} (1/5/15 min) at the start and "
        f"{'/'.join(f'{v:.1f}' for v in load_end)} at the end; {len(texts)} sample reviews; each n = the mean of "
        f"{len(texts)} calls (every cyclic window of n reviews), so every n sees the same length mix. "
        f"The median-length sample alone on the twin: {reference['seconds']:.3f} s (median of {REFERENCE_CALLS} calls)."
    )
    payload = {
        "measured": measured,
        "date": f"{started:%Y-%m-%d}",
        "time_utc": f"{started:%H:%M}",
        "host": f"{machine()}, {cpu_model()}",
        "host_ko": host_ko(),
        "core": args.core,
        "load": {"start": [round(v, 2) for v in load], "end": [round(v, 2) for v in load_end]},
        "reference": reference,
        "fit": curves[0]["fit"],
        "curves": curves,
    }
    args.curve.parent.mkdir(parents=True, exist_ok=True)
    args.curve.write_text(json.dumps(payload, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(report(measured, curves), encoding="utf-8")
    print(report(measured, curves))


def report(measured: str, curves: list[dict[str, Any]]) -> str:
    title = [f"{c['model']}, {c['packing']}" for c in curves]
    lines = [f"Measured {measured}", "", "| batch n | " + " | ".join(title) + " |", "|---:|" + "---:|" * len(curves)]
    for n in SERVED_SIZES:
        cells = []
        for c in curves:
            p = next((p for p in c["points"] if p["n"] == n), None)
            cells.append("–" if p is None else f"{p['seconds']:.4f} s ({p['per_review_s']:.4f} s/review)")
        lines.append(f"| {n} | " + " | ".join(cells) + " |")
    for name, c in zip(title, curves, strict=True):
        fit = c["fit"]
        lines.append(
            f"\n{name} ({c['model_line']}, {c['tokens'][0]}–{c['tokens'][1]} tokens per pair): seconds ≈ "
            f"{fit['a_s']:.4f} + {fit['b_s']:.4f}·n (a, b ≥ 0; R² {fit['r2']:.3f})"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
