"""The box's speed loop, live: a CPU hog on the box's core comes or goes, and the median review stays ~1 s.

`flock /tmp/lab-cpu.lock python -m bench.speed --scenario hog-then-quiet --out docs/bench/box-speed-hog.jsonl`

Starts `python -m app.box` (the default box, twin model) on a free port, sends the median sample
review (a unique number appended, so the cache never answers) to ② one at a time, and records each
review's `Server-Timing` inference and the box's speed (`/api/model` → `box.speed`) as it goes.
`hog-then-quiet`: a busy loop pinned to the box's core runs before the box starts and stops after
`--phase` seconds of reviews. `quiet-then-hog`: the reverse. The last line judges the rolling median
of five reviews from 60 s after the change on.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from app.engine.callshape_cache import cpu_model
from app.scorer import samples_by_length
from app.settings import Settings
from kit.host import load_average
from kit.measure import timing_s
from kit.serverproc import ServerProcess

HOG = "while True: pass"
BAND = 0.1  # the rolling median must stay within ±10 % of the target
SETTLE_S = 60.0


def start_hog(core: int) -> "subprocess.Popen[bytes]":
    return subprocess.Popen(["taskset", "-c", str(core), sys.executable, "-c", HOG])


def infer_s(response: httpx.Response) -> float | None:
    return timing_s(response.headers.get("Server-Timing"), "infer")


def rolling_median(values: list[float], n: int = 5) -> list[float]:
    return [statistics.median(values[max(0, i - n + 1) : i + 1]) for i in range(len(values))]


def judge(trace: list[dict[str, Any]], changed_at: float, target_s: float) -> dict[str, Any]:
    """From SETTLE_S after the change: does the rolling median of five reviews stay within ±BAND of the target?"""
    low, high = target_s * (1 - BAND), target_s * (1 + BAND)
    reviews = [r for r in trace if r.get("infer_s") is not None]
    rolled = rolling_median([r["infer_s"] for r in reviews])
    late = [m for r, m in zip(reviews, rolled, strict=True) if r["t"] >= changed_at + SETTLE_S]
    first_in = next(
        (
            r["t"] - changed_at
            for r, m in zip(reviews, rolled, strict=True)
            if r["t"] >= changed_at and low <= m <= high
        ),
        None,
    )
    # The box's own figure: the median of the last minute's reviews, as /api/model shows it.
    minute = [r["speed"]["achieved_s"] for r in reviews if r["t"] >= changed_at + SETTLE_S]
    return {
        "settled_minute_median_min": min(minute, default=None),
        "settled_minute_median_max": max(minute, default=None),
        "minute_median_in_band": bool(minute) and all(low <= m <= high for m in minute),
        "settled_reviews": len(late),
        "settled_min": min(late, default=None),
        "settled_max": max(late, default=None),
        "band_s": [round(low, 3), round(high, 3)],
        "in_band": bool(late) and all(low <= m <= high for m in late),
        "first_in_band_after_change_s": None if first_in is None else round(first_in, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--scenario", choices=["hog-then-quiet", "quiet-then-hog"], required=True)
    parser.add_argument("--phase", type=float, default=40.0, help="seconds of reviews before the change")
    parser.add_argument("--after", type=float, default=100.0, help="seconds of reviews after the change")
    parser.add_argument(
        "--target", type=float, default=1.0, help="seconds per median review (LAB_BOX_SECONDS_PER_REVIEW)"
    )
    parser.add_argument("--out")
    parser.add_argument("--note", default="", help="what else ran on the host meanwhile, said beside the numbers")
    args = parser.parse_args()
    settings = Settings()
    median = samples_by_length(settings)[len(samples_by_length(settings)) // 2]
    core = max(os.sched_getaffinity(0))  # the box takes the last core (app/box/placement.py)
    meta = {
        "scenario": args.scenario,
        "target_s": args.target,
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "host": cpu_model(),
        "load_before": load_average(),
        "box_core": core,
        "note": args.note,
    }
    hog = start_hog(core) if args.scenario == "hog-then-quiet" else None
    trace: list[dict[str, Any]] = []
    try:
        with ServerProcess(
            settings.resolved_model_dir(),
            box=True,
            LAB_JOB_STORE="memory://",
            LAB_BOX_SECONDS_PER_REVIEW=str(args.target),
        ) as server:
            t0 = time.monotonic()
            meta["box_start"] = httpx.get(f"{server.url}/api/model", timeout=10).json()["box"]
            changed_at = None
            i = 0
            while (now := time.monotonic() - t0) < args.phase + args.after:
                if changed_at is None and now >= args.phase:
                    changed_at = now
                    if hog is not None:
                        hog.kill()
                        hog.wait()
                        hog = None
                    else:
                        hog = start_hog(core)
                    trace.append(
                        {"t": round(now, 2), "event": "hog stopped" if args.scenario[0] == "h" else "hog started"}
                    )
                i += 1
                r = httpx.post(f"{server.url}/api/limited/predict", json={"text": f"{median} {i}"}, timeout=60)
                speed = httpx.get(f"{server.url}/api/model", timeout=10).json()["box"]["speed"]
                trace.append(
                    {
                        "t": round(time.monotonic() - t0, 2),
                        "status": r.status_code,
                        "infer_s": infer_s(r),
                        "speed": speed,
                    }
                )
    finally:
        if hog is not None:
            hog.kill()
            hog.wait()
    meta["load_after"] = load_average()
    verdict = judge(trace, changed_at or 0.0, args.target)
    lines = [json.dumps(meta), *(json.dumps(r, ensure_ascii=False) for r in trace), json.dumps({"verdict": verdict})]
    if args.out:
        Path(args.out).write_text("\n".join(lines) + "\n")
    print(json.dumps(meta))
    print(json.dumps({"verdict": verdict}))


if __name__ == "__main__":
    main()
