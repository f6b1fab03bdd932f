"""Does batching pay on one CPU thread, and what does padding cost? Measured in-process.

A pool of 8 sample reviews spread evenly over the samples' lengths; for batch size n, the 8
cyclic windows of n reviews from it are scored one `score` call each, so every n sees each
review exactly n times: the same length mix, only the batch size changes. Pairs sorted by
length into 24-pair chunks (`chunk_pairs=24`, what the lab serves) for n = 1..8, and the
whole batch padded to its longest pair (`chunk_pairs=0`, what a naive batcher does) for
n = 2, 4, 8 (for one review the two are the same). Fits seconds per call ≈ a + b·n.
It pins itself to one core (the last this process may use, `--core` to choose). Writes the curve the page
draws (static/batching-curve.json) and a table (docs/bench/batching.md).
"""

import argparse
import json
import os
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from app.bench.bursts import machine, model_line
from app.bench.cores import affinity, bench_core, pin_here
from app.callshape import CACHE_NAME, host_key, settle_call_shape
from app.model import CallShape, RerankerModel, load_topics
from app.settings import PROJECT_ROOT, TWIN_MODEL_DIR

TOPICS = PROJECT_ROOT / "app" / "data" / "topics.json"
SERVED_SIZES, PADDED_SIZES = tuple(range(1, 9)), (2, 4, 8)
POOL = 8


def spread_reviews(count: int) -> list[str]:
    """`count` samples at evenly spaced length quantiles, shuffled so neighbours differ in length."""
    samples = json.loads((PROJECT_ROOT / "app" / "data" / "sample_reviews.json").read_text(encoding="utf-8"))
    texts = sorted((s["text"] for s in samples), key=len)
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model-dir", type=Path, default=TWIN_MODEL_DIR)
    parser.add_argument("--curve", type=Path, default=PROJECT_ROOT / "static" / "batching-curve.json")
    parser.add_argument("--out", type=Path, default=PROJECT_ROOT / "docs" / "bench" / "batching.md")
    parser.add_argument("--core", type=int, default=bench_core(), help="the one CPU to time on (default: the last)")
    args = parser.parse_args()
    pin_here(args.core)

    texts = spread_reviews(POOL)
    topics = load_topics(TOPICS)
    started, load = datetime.now(UTC), os.getloadavg()
    model = RerankerModel(args.model_dir, topics, intra_op_threads=1)
    samples = json.loads((PROJECT_ROOT / "app" / "data" / "sample_reviews.json").read_text(encoding="utf-8"))
    override = os.environ.get("LAB_PAIR_CHUNK")
    served = settle_call_shape(
        model,
        sorted((str(s["text"]) for s in samples), key=len),
        key=lambda: host_key(args.model_dir / "model.onnx", 1),
        cache_file=args.model_dir / CACHE_NAME,
        override=int(override) if override else None,
    ).shape
    served_label = f"served: one review in {served.single.label}, a batch in {served.batch.label} per call"
    variants: list[tuple[str, CallShape, int, tuple[int, ...]]] = [
        (served_label, served, served.batch.chunk, SERVED_SIZES),
        ("whole batch padded", CallShape.fixed(0), 0, PADDED_SIZES),
    ]
    curves: list[dict[str, Any]] = []
    for label, shape, chunk, sizes in variants:
        model.call_shape = shape
        model.score(texts[:2])  # warm-up: the first call pays one-off setup
        seconds = []
        for n in sizes:
            seconds.append(batch_seconds(model, texts, n))
            print(f"{label:32} batch {n}: {seconds[-1]:.3f} s ({seconds[-1] / n:.3f} s/review)", flush=True)
        points = [
            {"n": n, "seconds": round(s, 4), "per_review_s": round(s / n, 4)}
            for n, s in zip(sizes, seconds, strict=True)
        ]
        curves.append({"packing": label, "chunk_pairs": chunk, "points": points, "fit": fit_line(list(sizes), seconds)})

    tokens = [model.count_tokens(t) for t in texts]
    measured = (
        f"{started:%Y-%m-%d %H:%M} UTC on {machine()}, {affinity()}, one onnxruntime thread, "
        f"load average {load[0]:.1f}/{load[1]:.1f}/{load[2]:.1f} (1/5/15 min) at the start; "
        f"model: {model_line(args.model_dir)}; {len(texts)} sample reviews "
        f"of {min(tokens)}–{max(tokens)} tokens per (topic, review) pair; each n = the mean of {len(texts)} calls "
        f"(every cyclic window of n reviews), so every n sees the same length mix."
    )
    payload = {"measured": measured, "date": f"{started:%Y-%m-%d}", "fit": curves[0]["fit"], "curves": curves}
    args.curve.parent.mkdir(parents=True, exist_ok=True)
    args.curve.write_text(json.dumps(payload, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")

    lines = [f"Measured {measured}", "", "| batch n | " + " | ".join(c["packing"] for c in curves) + " |"]
    lines.append("|---:|" + "---:|" * len(curves))
    for n in SERVED_SIZES:
        cells = []
        for c in curves:
            point = next((p for p in c["points"] if p["n"] == n), None)
            cells.append("–" if point is None else f"{point['seconds']:.3f} s ({point['per_review_s']:.3f} s/review)")
        lines.append(f"| {n} | " + " | ".join(cells) + " |")
    for c in curves:
        fit = c["fit"]
        lines.append(f"\n{c['packing']}: seconds ≈ {fit['a_s']:.3f} + {fit['b_s']:.3f}·n (R² {fit['r2']:.3f})")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
