"""Does batching pay on one CPU thread, and what does padding cost? Measured in-process.

Times one `score` call on batches of 1..8 mixed-length reviews (shortest and longest
alternating, the case where padding hurts most), with pairs sorted by length into 24-pair
chunks (`chunk_pairs=24`, what the lab serves) and with the whole batch padded to its
longest pair (`chunk_pairs=0`, what a naive batcher does), then fits seconds ≈ a + b·n.
Run it pinned to one core (`taskset -c 1`; `just bench` does). Writes the curve the page
draws (static/batching-curve.json) and a table (docs/bench/batching.md).
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

from app.bench.bursts import machine, model_line
from app.model import RerankerModel, load_topics
from app.settings import PROJECT_ROOT, TWIN_MODEL_DIR

TOPICS = PROJECT_ROOT / "app" / "data" / "topics.json"
VARIANTS = {24: "sorted 24-pair chunks (served)", 0: "whole batch padded"}
SIZES = range(1, 9)


def mixed_reviews(count: int) -> list[str]:
    """Alternate the shortest and longest samples: the case where padding hurts most."""
    samples = json.loads((PROJECT_ROOT / "app" / "data" / "sample_reviews.json").read_text(encoding="utf-8"))
    texts = sorted((s["text"] for s in samples), key=len)
    mixed = [t for pair in zip(texts, reversed(texts), strict=True) for t in pair]
    return mixed[:count]


def batch_seconds(model: RerankerModel, texts: list[str], repeats: int) -> float:
    """Median wall time of one `score` call on exactly these texts."""
    runs = []
    for _ in range(repeats):
        started = time.perf_counter()
        model.score(texts)
        runs.append(time.perf_counter() - started)
    return statistics.median(runs)


def fit_line(sizes: list[int], seconds: list[float]) -> dict[str, float]:
    """Least squares seconds ≈ a + b·n, with R² so a bad fit shows."""
    b, a = np.polyfit(sizes, seconds, 1)
    predicted = [a + b * n for n in sizes]
    residual = sum((s - p) ** 2 for s, p in zip(seconds, predicted, strict=True))
    spread = sum((s - statistics.fmean(seconds)) ** 2 for s in seconds)
    return {"a_s": round(float(a), 4), "b_s": round(float(b), 4), "r2": round(1 - residual / spread, 4)}


def affinity() -> str:
    cores = sorted(os.sched_getaffinity(0))
    return f"pinned to core {cores[0]}" if len(cores) == 1 else f"NOT pinned ({len(cores)} cores allowed)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model-dir", type=Path, default=TWIN_MODEL_DIR)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--curve", type=Path, default=PROJECT_ROOT / "static" / "batching-curve.json")
    parser.add_argument("--out", type=Path, default=PROJECT_ROOT / "docs" / "bench" / "batching.md")
    args = parser.parse_args()

    texts = mixed_reviews(max(SIZES))
    topics = load_topics(TOPICS)
    started = datetime.now(UTC)
    curves: list[dict[str, Any]] = []
    for chunk, label in VARIANTS.items():
        model = RerankerModel(args.model_dir, topics, intra_op_threads=1, chunk_pairs=chunk)
        model.score(texts[:2])  # warm-up: the first call pays one-off setup
        seconds = []
        for n in SIZES:
            seconds.append(batch_seconds(model, texts[:n], args.repeats))
            print(f"{label:32} batch {n}: {seconds[-1]:.3f} s ({seconds[-1] / n:.3f} s/review)", flush=True)
        points = [
            {"n": n, "seconds": round(s, 4), "per_review_s": round(s / n, 4)}
            for n, s in zip(SIZES, seconds, strict=True)
        ]
        curves.append({"packing": label, "chunk_pairs": chunk, "points": points, "fit": fit_line(list(SIZES), seconds)})

    tokens = [model.count_tokens(t) for t in texts]
    measured = (
        f"{started:%Y-%m-%d %H:%M} UTC on {machine()}, {affinity()}, one onnxruntime thread, "
        f"the box shared with other work; model: {model_line(args.model_dir)}; batch n = the first n of "
        f"{len(texts)} reviews of {min(tokens)}–{max(tokens)} tokens per (topic, review) pair, shortest and "
        f"longest alternating; median of {args.repeats} calls."
    )
    served = curves[0]
    payload = {"measured": measured, "date": f"{started:%Y-%m-%d}", "fit": served["fit"], "curves": curves}
    args.curve.parent.mkdir(parents=True, exist_ok=True)
    args.curve.write_text(json.dumps(payload, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")

    lines = [f"Measured {measured}", "", "| batch n | " + " | ".join(VARIANTS.values()) + " |"]
    lines.append("|---:|" + "---:|" * len(VARIANTS))
    for i, n in enumerate(SIZES):
        cells = [f"{c['points'][i]['seconds']:.3f} s ({c['points'][i]['per_review_s']:.3f} s/review)" for c in curves]
        lines.append(f"| {n} | " + " | ".join(cells) + " |")
    for c in curves:
        fit = c["fit"]
        lines.append(f"\n{c['packing']}: seconds ≈ {fit['a_s']:.3f} + {fit['b_s']:.3f}·n (R² {fit['r2']:.3f})")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
