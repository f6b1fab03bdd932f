"""Which memory setting gives ①'s burst back: per-review cost and memory after a burst of 12, per setting.

`flock /tmp/lab-cpu.lock python -m app.bench.arena [--rounds 2]` runs each setting in its own
process on one core (the box's), taking turns round by round, and prints one JSON line per run
plus a table. Settings: onnxruntime's CPU arena as today (`arena`), the arena with shrinkage
after every call (`shrink`), no arena (`no_arena`), each optionally followed by glibc's
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
from typing import Any

import psutil

from app.bench.cores import bench_core
from app.model import RerankerModel, load_topics
from app.settings import PROJECT_ROOT, Settings

SETTINGS = ["arena", "shrink", "no_arena", "arena+trim", "shrink+trim", "no_arena+trim"]
BURST = 12
REVIEWS = 9  # single reviews timed per run, one after another
AFTER_S = (0.5, 2.0, 5.0, 10.0)


def rss() -> int:
    return int(psutil.Process().memory_info().rss)


def trim() -> None:
    ctypes.CDLL("libc.so.6").malloc_trim(0)


def child(setting: str) -> dict[str, Any]:
    """One setting in this process: idle memory, per-review cost, then a ① burst and what is left after it."""
    memory, _, after = setting.partition("+")
    s = Settings()
    model = RerankerModel(s.resolved_model_dir(), load_topics(s.topics_file), memory=memory)
    texts = sorted((str(x["text"]) for x in json.loads(s.samples_file.read_text(encoding="utf-8"))), key=len)
    median = texts[len(texts) // 2]
    for t in texts[:3]:
        model.score([t])  # warm up, as the server's start-up does
    if after == "trim":
        trim()
    idle = rss()
    costs = []
    for i in range(REVIEWS):
        started = time.perf_counter()
        model.score([f"{median} {i}"])
        costs.append(time.perf_counter() - started)
    if after == "trim":
        trim()
    before = rss()
    peak = [before]
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.02):
            peak.append(rss())

    sampler = threading.Thread(target=sample)
    sampler.start()
    burst = [threading.Thread(target=model.score, args=([f"{texts[i % len(texts)]} {i}"],)) for i in range(BURST)]
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
    done.set()
    sampler.join()
    return {
        "setting": setting,
        "idle_rss": idle,
        "before_burst_rss": before,
        "peak_rss": max(peak),
        "after_rss": left,
        "review_s": costs,
        "median_review_s": statistics.median(costs),
        "burst_s": round(burst_s, 3),
    }


def run(setting: str, core: int | None) -> dict[str, Any]:
    pin = [] if core is None else ["taskset", "-c", str(core)]
    out = subprocess.run(
        [*pin, sys.executable, "-m", "app.bench.arena", "--child", setting],
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


def table(runs: list[dict[str, Any]]) -> str:
    """Per setting, medians over the rounds; cost as a ratio to `arena` within each round."""
    rounds = sorted({r["round"] for r in runs})
    lines = [
        "| setting | review cost vs arena | idle MiB | peak MiB | +10 s MiB | +10 s vs idle |",
        "|---|---|---|---|---|---|",
    ]
    for setting in SETTINGS:
        mine = [r for r in runs if r["setting"] == setting]
        if not mine:
            continue
        ratios = []
        for n in rounds:
            base = [r for r in runs if r["round"] == n and r["setting"] == "arena"]
            own = [r for r in mine if r["round"] == n]
            if base and own:
                ratios.append(own[0]["median_review_s"] / base[0]["median_review_s"])
        idle = statistics.median(r["idle_rss"] for r in mine)
        peak = statistics.median(r["peak_rss"] for r in mine)
        left = statistics.median(r["after_rss"]["10.0"] for r in mine)
        ratio = f"{statistics.median(ratios):.3f}" if ratios else "-"
        lines.append(
            f"| {setting} | {ratio} | {mib(idle)} | {mib(peak)} | {mib(left)} | {100 * (left / idle - 1):+.0f} % |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--child")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--out")
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child)), flush=True)
        return
    core = bench_core()
    runs = []
    for n in range(args.rounds):
        for setting in SETTINGS if n % 2 == 0 else reversed(SETTINGS):
            result = {"round": n, **run(setting, core)}
            runs.append(result)
            print(json.dumps(result), flush=True)
    if args.out:
        with open(args.out, "w") as f:
            for r in runs:
                f.write(json.dumps(r) + "\n")
    print(table(runs))


if __name__ == "__main__":
    main()
