"""Does batching pay on one CPU thread, and what does padding cost? Measured in-process.

Scores the same mixed-length reviews one at a time and in batches of 4 and 8, with pairs
sorted by length into 24-pair chunks (`pair_chunk=24`, what the lab serves), into 96-pair
chunks (bigger matrix products), and with the whole batch padded to its longest pair
(`pair_chunk=0`, what a naive batcher does).
"""

import argparse
import json
import statistics
import time
from datetime import UTC, datetime
from pathlib import Path

from app.bench.bursts import machine, model_line
from app.model import RerankerModel, load_topics
from app.settings import PROJECT_ROOT, TWIN_MODEL_DIR

TOPICS = PROJECT_ROOT / "app" / "data" / "topics.json"


def mixed_reviews(count: int) -> list[str]:
    """Alternate the shortest and longest samples: the case where padding hurts most."""
    samples = json.loads((PROJECT_ROOT / "app" / "data" / "sample_reviews.json").read_text(encoding="utf-8"))
    texts = sorted((s["text"] for s in samples), key=len)
    mixed = [t for pair in zip(texts, reversed(texts), strict=True) for t in pair]
    return mixed[:count]


def seconds_per_review(model: RerankerModel, texts: list[str], batch: int, repeats: int) -> float:
    runs = []
    for _ in range(repeats):
        started = time.perf_counter()
        for i in range(0, len(texts), batch):
            model.score(texts[i : i + batch])
        runs.append((time.perf_counter() - started) / len(texts))
    return statistics.median(runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model-dir", type=Path, default=TWIN_MODEL_DIR)
    parser.add_argument("--reviews", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--out", type=Path, default=PROJECT_ROOT / "docs" / "bench" / "batching.md")
    args = parser.parse_args()

    texts = mixed_reviews(args.reviews)
    topics = load_topics(TOPICS)
    rows = []
    variants = ((24, "sorted, 24-pair chunks (served)"), (96, "sorted, 96-pair chunks"), (0, "whole batch padded"))
    for chunk, label in variants:
        model = RerankerModel(args.model_dir, topics, chunk_pairs=chunk)
        model.score(texts[:1])  # warm-up
        tokens = [model.count_tokens(t) for t in texts]
        for batch in (1, 4, 8):
            if chunk != 24 and batch == 1:
                continue  # one review is one 24-pair chunk whatever the packing
            per_review = seconds_per_review(model, texts, batch, args.repeats)
            rows.append((label, batch, per_review))
            print(f"{label:24} batch {batch}: {per_review:.3f} s/review", flush=True)

    lines = [
        f"Measured {datetime.now(UTC):%Y-%m-%d %H:%M} UTC on {machine()}; model: {model_line(args.model_dir)}; "
        f"one onnxruntime thread; {len(texts)} reviews of {min(tokens)}–{max(tokens)} tokens per (topic, review) "
        f"pair, shortest and longest alternating; median of {args.repeats} runs.",
        "",
        "| packing | batch | s per review | vs one at a time |",
        "|---|---:|---:|---:|",
    ]
    single = next(r[2] for r in rows if r[1] == 1)
    lines += [f"| {label} | {batch} | {s:.3f} | {s / single:.2f}× |" for label, batch, s in rows]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
