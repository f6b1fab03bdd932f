"""Which memory setting gives ①'s burst back: per-review cost and memory after a burst of 12, per setting.

`flock /tmp/lab-cpu.lock python -m bench.arena [--rounds 15] [--out docs/bench/memory-arena.json]`
times one review per setting in turn in one process (paired ratios, `--rounds` turns), then runs a
① burst in a fresh process per setting, all on one core (the box's), and prints JSON and a table.
Settings: onnxruntime's CPU arena as today (`arena`), the arena with shrinkage after every call
(`shrink`), no arena (`no_arena`), each optionally followed by glibc's
`malloc_trim(0)` once the burst is over (`+trim`), which is what the server can do when the last
① inference ends.
"""

import argparse
import ctypes
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime
from typing import Any

import psutil

from app.engine.model import RerankerModel, load_topics
from app.settings import PROJECT_ROOT, Settings
from bench.cores import bench_core
from bench.measure import PeakRss, alone
from bench.speed import host_line, load

SETTINGS = ["arena", "shrink", "no_arena", "arena+trim", "shrink+trim", "no_arena+trim"]
BURST = 12
AFTER_S = (0.5, 2.0, 5.0, 10.0)


def rss() -> int:
    return int(psutil.Process().memory_info().rss)


def trim() -> None:
    ctypes.CDLL("libc.so.6").malloc_trim(0)


def load_model(memory: str) -> tuple[RerankerModel, list[str]]:
    s = Settings()
    model = RerankerModel(s.resolved_model_dir(), load_topics(s.topics_file), memory=memory)
    texts = sorted((str(x["text"]) for x in json.loads(s.samples_file.read_text(encoding="utf-8"))), key=len)
    for t in texts[:3]:
        model.score([t])  # warm up, as the server's start-up does
    return model, texts


def child_cost(rounds: int) -> dict[str, Any]:
    """Per-review cost of each memory setting in one process, taking turns review by review (paired ratios),
    and what one malloc_trim costs right after a review."""
    models = {m: load_model(m)[0] for m in ("arena", "shrink", "no_arena")}
    _, texts = load_model("arena")
    median = texts[len(texts) // 2]
    costs: dict[str, list[float]] = {m: [] for m in models}
    trims = []
    for i in range(rounds):
        order = list(models) if i % 2 == 0 else list(reversed(models))
        for m in order:
            started = time.perf_counter()
            models[m].score([f"{median} {i}"])
            costs[m].append(time.perf_counter() - started)
        started = time.perf_counter()
        trim()
        trims.append(time.perf_counter() - started)
    ratios = {m: statistics.median(c / a for c, a in zip(costs[m], costs["arena"], strict=True)) for m in models}
    return {
        "kind": "cost",
        "rounds": rounds,
        "median_review_s": {m: round(statistics.median(c), 4) for m, c in costs.items()},
        "paired_ratio_to_arena": {m: round(r, 4) for m, r in ratios.items()},
        "malloc_trim_s_median": round(statistics.median(trims), 5),
        "malloc_trim_s_max": round(max(trims), 5),
    }


def child(setting: str) -> dict[str, Any]:
    """One setting in this process: idle memory, then a ① burst of 12 threads, and what is left after it."""
    memory, _, after = setting.partition("+")
    model, texts = load_model(memory)
    if after == "trim":
        trim()
    idle = rss()
    burst = [threading.Thread(target=model.score, args=([f"{texts[i % len(texts)]} {i}"],)) for i in range(BURST)]
    with PeakRss(alone(os.getpid()), every_s=0.02) as peak:
        t0 = time.perf_counter()
        for thread in burst:
            thread.start()
        for thread in burst:
            thread.join()
        burst_s = time.perf_counter() - t0
        if after == "trim":
            trim()
        ended = time.perf_counter()
        left = {}
        for at in AFTER_S:
            time.sleep(max(at - (time.perf_counter() - ended), 0))
            left[str(at)] = rss()
    return {
        "kind": "memory",
        "setting": setting,
        "idle_rss": idle,
        "peak_rss": max(idle, peak.peak),
        "after_rss": left,
        "burst_s": round(burst_s, 3),
    }


def run(child_args: list[str], core: int | None) -> dict[str, Any]:
    pin = [] if core is None else ["taskset", "-c", str(core)]
    out = subprocess.run(
        [*pin, sys.executable, "-m", "bench.arena", *child_args],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def mib(n: float) -> str:
    return f"{n / 2**20:.0f}"


def table(cost: dict[str, Any], runs: list[dict[str, Any]]) -> str:
    """Per setting: the paired cost ratio (one process) and the memory of its own process around a burst."""
    lines = [
        "| setting | review cost vs arena | idle MiB | peak MiB | +0.5 s MiB | +10 s MiB | +10 s vs idle |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in runs:
        memory = r["setting"].partition("+")[0]
        ratio = cost["paired_ratio_to_arena"].get(memory)
        left, idle = r["after_rss"]["10.0"], r["idle_rss"]
        lines.append(
            f"| {r['setting']} | {ratio:.3f} | {mib(idle)} | {mib(r['peak_rss'])} | {mib(r['after_rss']['0.5'])} "
            f"| {mib(left)} | {100 * (left / idle - 1):+.0f} % |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--child")
    parser.add_argument("--child-cost", type=int, default=0, help="rounds of the in-process cost comparison")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--no-pin", action="store_true", help="let the OS place it (a shared host's last core is busy)")
    parser.add_argument("--out")
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child)), flush=True)
        return
    if args.child_cost:
        print(json.dumps(child_cost(args.child_cost)), flush=True)
        return
    core = None if args.no_pin else bench_core()
    meta = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "host": host_line(),
        "load_before": load(),
        "pinned_core": core,
        "note": "shared machine: other helpers' builds, tests and benchmarks ran beside it",
    }
    cost = run(["--child-cost", str(args.rounds)], core)
    print(json.dumps(cost), flush=True)
    runs = []
    for setting in SETTINGS:
        result = run(["--child", setting], core)
        runs.append(result)
        print(json.dumps(result), flush=True)
    meta["load_after"] = load()
    if args.out:
        with open(args.out, "w") as f:
            json.dump({**meta, "cost": cost, "memory": runs}, f, indent=1)
    print(json.dumps(meta))
    print(table(cost, runs))


if __name__ == "__main__":
    main()
