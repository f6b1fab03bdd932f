"""Where does batching pay? Two models on the same CPU thread, measured in-process.

A pool of 8 sample reviews spread evenly over the samples' lengths; for batch size n, the 8
cyclic windows of n reviews from it are scored one `score` call each, so every n sees each
review exactly n times: the same length mix, only the batch size changes. Curves:

- the twin (what the box serves), pairs sorted by length into the served chunks, n = 1..8: the
  arithmetic per review dominates, so the per-call cost a is small and batching barely pays;
- with --padded, the twin with the whole batch padded to its longest pair (a naive batcher), n = 2, 4, 8;
- the tiny test model (2 layers, hidden 64: about 1/1000 of the twin's arithmetic per token), same
  packing, n = 1..8: what is left is the fixed cost of one call (Python, the tokenizer, onnxruntime's
  run), the shape where batching pays.

Fits seconds per call ≈ a + b·n with a, b ≥ 0 (least squares; a negative coefficient is clamped to 0
and the other refitted: an exact non-negative least squares for two coefficients). Values are also
given at the box's speed: the box slows its core until the median sample review costs its target
(LAB_BOX_SECONDS_PER_REVIEW) with a CPU quota, which slows every CPU second by the same factor, so
each time is scaled by target / (the median review's cost on the twin here, measured in this run).
Pins itself to one core (the last this process may use, `--core` to choose). Writes the curves the
page draws (static/batching-curve.json) and a table (docs/bench/batching.md). `just bench-batching`.
"""

import argparse
import json
import os
import statistics
import subprocess
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from app.bench.bursts import machine, model_line
from app.bench.cores import affinity, bench_core, pin_here
from app.model import RerankerModel, load_topics
from app.settings import PROJECT_ROOT, TWIN_MODEL_DIR, Settings

TOPICS = PROJECT_ROOT / "app" / "data" / "topics.json"
TINY_MODEL_DIR = PROJECT_ROOT / "tests" / "assets" / "tiny-reranker"
POOL = 8
SIZES = range(1, 9)
PADDED_SIZES = (2, 4, 8)


def spread_reviews(count: int) -> list[str]:
    """`count` samples at evenly spaced length quantiles, shuffled so neighbours differ in length."""
    texts = samples_by_length()
    picked = [texts[round(i * (len(texts) - 1) / (count - 1))] for i in range(count)]
    return [picked[(i * 3) % count] for i in range(count)]  # 3 is coprime with 8: a fixed mix of short and long


def samples_by_length() -> list[str]:
    samples = json.loads((PROJECT_ROOT / "app" / "data" / "sample_reviews.json").read_text(encoding="utf-8"))
    return sorted((str(s["text"]) for s in samples), key=len)


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
    """Least squares seconds ≈ a + b·n with a, b ≥ 0, and R² so a bad fit shows."""
    n, s = np.asarray(sizes, dtype=float), np.asarray(seconds, dtype=float)
    b, a = (float(v) for v in np.polyfit(n, s, 1))
    if a < 0:  # a negative per-call cost is not a cost: clamp it and refit the slope through the origin
        a, b = 0.0, float(n @ s / (n @ n))
    if b < 0:
        a, b = float(s.mean()), 0.0
    residual = float(((s - (a + b * n)) ** 2).sum())
    spread = float(((s - s.mean()) ** 2).sum())
    return {"a_s": round(a, 4), "b_s": round(b, 4), "r2": round(1 - residual / spread, 4) if spread else 1.0}


def measure(model_dir: Path, chunk: int, sizes: tuple[int, ...], texts: list[str], scale: float) -> dict[str, Any]:
    topics = load_topics(TOPICS)
    model = RerankerModel(model_dir, topics, intra_op_threads=1, chunk_pairs=chunk)
    model.score(texts[:2])  # warm-up: the first call pays one-off setup
    seconds = []
    for n in sizes:
        seconds.append(batch_seconds(model, texts, n))
        print(f"{model_dir.name:28} chunk {chunk:2} batch {n}: {seconds[-1]:.4f} s", flush=True)
    points = [
        {
            "n": n,
            "seconds": round(s, 4),
            "per_review_s": round(s / n, 4),
            "box_seconds": round(s * scale, 4),
            "box_per_review_s": round(s * scale / n, 4),
        }
        for n, s in zip(sizes, seconds, strict=True)
    ]
    tokens = [model.count_tokens(t) for t in texts]
    fit = fit_line(list(sizes), seconds)
    return {
        "model": "tiny" if model_dir == TINY_MODEL_DIR else "twin",
        "model_line": model_line(model_dir),
        "chunk_pairs": chunk,
        "packing": "whole batch padded" if chunk == 0 else f"sorted {chunk}-pair chunks (served)",
        "tokens": [min(tokens), max(tokens)],
        "points": points,
        "fit": fit,
        "box_fit": {"a_s": round(fit["a_s"] * scale, 4), "b_s": round(fit["b_s"] * scale, 4)},
    }


def host_cpu() -> str:
    """`lscpu`'s model name, the host the numbers belong to."""
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout
    except OSError:
        return "unknown CPU"
    return next((line.split(":", 1)[1].strip() for line in out.splitlines() if line.startswith("Model name")), "?")


def box_scale(model_dir: Path, chunk: int, target_s: float) -> dict[str, float]:
    """The box's slow-down: target / the median sample review's cost here (median of 5 calls)."""
    texts = samples_by_length()
    median = texts[len(texts) // 2]
    model = RerankerModel(model_dir, load_topics(TOPICS), intra_op_threads=1, chunk_pairs=chunk)
    model.score([median])
    costs = []
    for _ in range(5):
        started = time.perf_counter()
        model.score([median])
        costs.append(time.perf_counter() - started)
    host_s = statistics.median(costs)
    return {"target_s": target_s, "host_median_review_s": round(host_s, 4), "scale": round(target_s / host_s, 4)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model-dir", type=Path, default=TWIN_MODEL_DIR)
    parser.add_argument("--curve", type=Path, default=PROJECT_ROOT / "static" / "batching-curve.json")
    parser.add_argument("--out", type=Path, default=PROJECT_ROOT / "docs" / "bench" / "batching.md")
    parser.add_argument("--core", type=int, default=bench_core(), help="the one CPU to time on (default: the last)")
    parser.add_argument("--padded", action="store_true", help="also the twin padded to the longest pair (~4 min)")
    parser.add_argument("--sizes", default="1-8", help="batch sizes: 1-8 (default) or a list such as 1,2,4,8")
    args = parser.parse_args()
    pin_here(args.core)
    sizes = tuple(range(1, 9)) if args.sizes == "1-8" else tuple(int(n) for n in args.sizes.split(","))
    settings = Settings()
    served = settings.pair_chunk  # what the lab serves now: the curves follow a change of call shape

    texts = spread_reviews(POOL)
    started, load = datetime.now(UTC), os.getloadavg()
    box = box_scale(args.model_dir, served, settings.box_seconds_per_review)
    curves = [
        measure(args.model_dir, served, sizes, texts, box["scale"]),
        measure(TINY_MODEL_DIR, served, sizes, texts, box["scale"]),
    ]
    if served and args.padded:
        curves.append(measure(args.model_dir, 0, PADDED_SIZES, texts, box["scale"]))
    load_after = os.getloadavg()
    host = host_cpu()
    measured = (
        f"{started:%Y-%m-%d %H:%M} UTC on {machine()}, {host}, {affinity()}, one onnxruntime thread, "
        f"load average {load[0]:.1f} at the start and {load_after[0]:.1f} at the end (other work shared the machine); "
        f"{len(texts)} sample reviews; each n = the mean of {len(texts)} calls (every cyclic window of n reviews). "
        f"Box speed: x{box['scale']:.3f} = {box['target_s']:g} s target / {box['host_median_review_s']:.3f} s "
        "for the median review on the twin here."
    )
    measured_ko = (
        f"{started:%Y-%m-%d %H:%M}(협정 세계시) 이 실습 서버의 CPU 코어 1개·스레드 1개에서 측정, "
        "같은 리뷰 8개로 묶음 크기만 바꿈. "
        f"상자 속도로 환산: 중간 길이 리뷰가 여기서 {box['host_median_review_s']:.3f}초, 상자에서 "
        f"{box['target_s']:g}초이므로 모든 값 ×{box['scale']:.2f}. GPU에서 잰 값은 없습니다(이 실습에 GPU가 없음)."
    )
    payload = {
        "measured": measured,
        "measured_ko": measured_ko,
        "date": f"{started:%Y-%m-%d}",
        "host": host,
        "box": box,
        "fit": curves[0]["fit"],
        "curves": curves,
        "gpu": None,  # no GPU was lent and no published measurement of this model family was found: never estimated
    }
    args.curve.parent.mkdir(parents=True, exist_ok=True)
    args.curve.write_text(json.dumps(payload, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(report(measured, curves), encoding="utf-8")
    print(report(measured, curves))


def report(measured: str, curves: list[dict[str, Any]]) -> str:
    title = [f"{c['model']}, {c['packing']}" for c in curves]
    lines = [f"Measured {measured}", "", "| batch n | " + " | ".join(title) + " |", "|---:|" + "---:|" * len(curves)]
    for n in SIZES:
        cells = []
        for c in curves:
            p = next((p for p in c["points"] if p["n"] == n), None)
            cells.append("–" if p is None else f"{p['seconds']:.4f} s ({p['per_review_s']:.4f} s/review)")
        lines.append(f"| {n} | " + " | ".join(cells) + " |")
    for name, c in zip(title, curves, strict=True):
        fit, box = c["fit"], c["box_fit"]
        lines.append(
            f"\n{name} ({c['model_line']}, {c['tokens'][0]}–{c['tokens'][1]} tokens per pair): seconds ≈ "
            f"{fit['a_s']:.4f} + {fit['b_s']:.4f}·n (a, b ≥ 0; R² {fit['r2']:.3f}); "
            f"at the box's speed {box['a_s']:.4f} + {box['b_s']:.4f}·n"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
