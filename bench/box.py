"""Measure the box as `just serve` runs it: serialization on ①, calibration, deaths at the cap (docs/box.md).

`flock /tmp/lab-cpu.lock python -m bench.box [--runs 3]` starts `python -m app.box` with the
twin and the default box, fires bursts of 12 at each path and prints JSON lines.
"""

import argparse
import asyncio
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
import psutil

from app.engine.callshape_cache import cpu_model
from app.paths.registry import PATHS
from app.settings import PROJECT_ROOT, Settings
from kit.fire import fire_one
from kit.host import load_average
from kit.measure import PeakRss, children, timing_s
from kit.serverproc import free_port, stop_process, wait_healthy

SAMPLES = [str(s["text"]) for s in json.loads(Settings().samples_file.read_text(encoding="utf-8"))]
QUEUEING = [p.name for p in PATHS if p.name != "naive"]  # every path but ①, which the cap kills


def long_texts(n: int, chars: int = 300) -> list[str]:
    return [(SAMPLES[i % len(SAMPLES)] + " ") * (chars // len(SAMPLES[i % len(SAMPLES)]) + 1) for i in range(n)]


def server_pid(supervisor: int) -> int | None:
    children = psutil.Process(supervisor).children(recursive=True)
    return children[-1].pid if children else None


_bursts = 0


def median_review_on_limited(url: str, runs: int = 5) -> dict[str, Any]:
    """The median sample review (plus one digit, so the cache misses) on ②, one at a time: what a review costs."""
    text = sorted(SAMPLES, key=len)[len(SAMPLES) // 2]
    times = []
    for i in range(runs):
        r = httpx.post(f"{url}/api/limited/predict", json={"text": f"{text}{i}"}, timeout=60)
        times.append(timing_s(r.headers.get("Server-Timing"), "infer"))
    return {"median_sample_review_on_limited_s": [round(t, 3) for t in times if t is not None], "chars": len(text) + 1}


async def burst(url: str, path: str, texts: list[str]) -> dict[str, Any]:
    global _bursts
    _bursts += 1  # unique texts, a few characters longer: the result cache must not answer for the model
    texts = [f"{text} {_bursts}{i:02d}" for i, text in enumerate(texts)]
    async with httpx.AsyncClient(base_url=url, timeout=600) as client:
        started = time.perf_counter()
        replies = await asyncio.gather(*(fire_one(client, path, t) for t in texts))
        wall = time.perf_counter() - started
    ok = [r for r in replies if r.status == 200 or r.final == "done"]
    infers = [r.infer_s for r in ok if r.infer_s is not None]
    return {
        "path": path,
        "sent": len(texts),
        "served": len(ok),
        "lost_connections": sum(r.status == 0 for r in replies),
        "p50_round_trip_s": round(statistics.median(r.round_trip_s for r in ok), 3) if ok else None,
        "median_infer_s": round(statistics.median(infers), 3) if infers else None,
        "served_per_s": round(len(ok) / wall, 3),
    }


def cpus_allowed(pid: int) -> list[str]:
    return sorted(
        {
            line.split(":")[1].strip()
            for task in Path(f"/proc/{pid}/task").iterdir()
            for line in (task / "status").read_text().splitlines()
            if line.startswith("Cpus_allowed_list:")
        }
    )


def memory_mib(url: str) -> tuple[float, str]:
    """The box's memory as /api/stats shows it (the cgroup's charge, else RSS), in MiB, and its source."""
    memory = httpx.get(f"{url}/api/stats", timeout=10).json()["memory"]
    return round(memory["bytes"] / 2**20, 1), memory["source"]


def give_back(
    url: str, texts: list[str], runs: int, within_s: float = 10.0, paths: tuple[str, ...] = ("naive",)
) -> None:
    """Bursts that survive (① 8, or floods of ② and ⑤ nearly all refused), one after another, and the box's memory
    every 0.5 s for `within_s` after each: is the box the box it was before the first (the cgroup's charge within
    +8 % of that idle)?"""
    first_idle, _ = memory_mib(url)
    for run, path in ((run, path) for run in range(runs) for path in paths):
        idle, source = memory_mib(url)
        result = asyncio.run(burst(url, path, texts))
        ended = time.monotonic()
        trace = []
        while (at := time.monotonic() - ended) <= within_s:
            trace.append((round(at, 1), memory_mib(url)[0]))
            time.sleep(0.5)
        back = next((at for at, mib in trace if mib <= 1.08 * first_idle), None)
        print(
            json.dumps(
                {
                    **result,
                    "scenario": "give-back" if paths == ("naive",) else "flood",
                    "refused": result["sent"] - result["served"] - result["lost_connections"],
                    "run": run + 1,
                    "source": source,
                    "idle_before_first_mib": first_idle,
                    "idle_mib": idle,
                    "after_mib": trace,
                    "last_vs_first_idle": round(trace[-1][1] / first_idle, 3),
                    "last_vs_idle_before": round(trace[-1][1] / idle, 3),
                    "within_8pct_of_first_idle_after_s": back,
                }
            ),
            flush=True,
        )


FLOODED = ("limited", "adaptive")


def restart(url: str, supervisor: int, crowd: int = 50, during: int = 30) -> None:
    """① `crowd` kill the box; `during` more ① sent once the next incarnation is starting (its process is there):
    what they got, the deaths, and when /health and a ② answered 200 after they were sent."""
    first = {child.pid for child in psutil.Process(supervisor).children()}
    crowd_sent = time.monotonic()
    killed = asyncio.run(burst(url, "naive", [SAMPLES[i % len(SAMPLES)] for i in range(crowd)]))
    while not {child.pid for child in psutil.Process(supervisor).children()} - first:
        time.sleep(0.01)
    sent = time.monotonic()
    during_result = asyncio.run(burst(url, "naive", [SAMPLES[i % len(SAMPLES)] for i in range(during)]))
    wait_healthy(url, limit_s=180)
    health_s = time.monotonic() - sent
    while True:
        try:
            r = httpx.post(f"{url}/api/limited/predict", json={"text": f"돌아왔나요 {sent}"}, timeout=60)
            if r.status_code == 200:
                break
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    limited_s = time.monotonic() - sent
    box = httpx.get(f"{url}/api/stats", timeout=10).json()["box"]
    print(
        json.dumps(
            {
                "scenario": "restart",
                "crowd": {k: killed[k] for k in ("sent", "served", "lost_connections")},
                "during": {k: during_result[k] for k in ("sent", "served", "lost_connections")},
                "health_200_after_during_s": round(health_s, 1),
                "health_200_after_crowd_s": round(health_s + sent - crowd_sent, 1),
                "limited_200_after_during_s": round(limited_s, 1),
                "limited_200_after_crowd_s": round(limited_s + sent - crowd_sent, 1),
                "deaths": box["deaths"],
                "incarnation": box["incarnation"],
            }
        ),
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--only", default="serial,memory", help="serial, paths, memory, give-back, flood, restart")
    parser.add_argument("--flood", type=int, default=1000, help="requests in each flood of ② and of ⑤ (flood)")
    args = parser.parse_args()
    started = datetime.now(UTC).isoformat(timespec="seconds")
    print(json.dumps({"date": started, "host": cpu_model(), "load_before": load_average()}), flush=True)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = open("/tmp/lab-bench-box.log", "wb")  # noqa: SIM115
    argv = [sys.executable, "-m", "app.box", "--host", "127.0.0.1", "--port", str(port)]
    box = subprocess.Popen(argv, cwd=PROJECT_ROOT, env=dict(os.environ), stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_healthy(url, box, limit_s=300)
        cap = Settings().memory_cap_bytes
        print(json.dumps({"model_box": httpx.get(f"{url}/api/model").json()["box"]}), flush=True)
        pid = server_pid(box.pid)
        print(json.dumps({"cpus_allowed_every_thread": cpus_allowed(pid) if pid else None}), flush=True)
        texts = [SAMPLES[i % len(SAMPLES)] for i in range(12)]
        if "serial" in args.only:
            print(json.dumps(median_review_on_limited(url)), flush=True)
            for path in ("limited", "naive"):
                print(json.dumps(asyncio.run(burst(url, path, texts))), flush=True)
        if "give-back" in args.only:  # ① 8, the first eight samples (as `just burst $B 8` sends them)
            give_back(url, [SAMPLES[i] for i in range(8)], args.runs)
        if "flood" in args.only:  # 1,000 ② at once, then 1,000 ⑤, `runs` times: nearly all refused at once
            give_back(url, [SAMPLES[i % len(SAMPLES)] for i in range(args.flood)], args.runs, paths=FLOODED)
        if "restart" in args.only:
            restart(url, box.pid)
        if "paths" in args.only:  # on a fresh box: ①'s arena, once grown, stays in the RSS of the paths after it
            for kind, batch in (("sample", texts), ("300-char", long_texts(12))):
                for path in QUEUEING:
                    with PeakRss(children(box.pid)) as peak:
                        result = asyncio.run(burst(url, path, batch))
                    print(json.dumps({**result, "texts": kind, "peak_rss_fraction_of_cap": round(peak.peak / cap, 3)}))
        if "memory" in args.only:
            for kind, batch in (("sample", texts), ("300-char", long_texts(12))):
                for path in QUEUEING:
                    with PeakRss(children(box.pid)) as peak:
                        result = asyncio.run(burst(url, path, batch))
                    print(json.dumps({**result, "texts": kind, "peak_rss_fraction_of_cap": round(peak.peak / cap, 3)}))
                for run in range(args.runs):
                    before = httpx.get(f"{url}/api/stats").json()["box"]
                    with PeakRss(children(box.pid)) as peak:
                        result = asyncio.run(burst(url, "naive", batch))
                    back_s = round(wait_healthy(url, limit_s=180), 1)
                    after = httpx.get(f"{url}/api/stats").json()["box"]
                    died = after["incarnation"] > before["incarnation"]
                    print(
                        json.dumps(
                            {
                                **result,
                                "texts": kind,
                                "run": run + 1,
                                "died": died,
                                "peak_rss_fraction_of_cap": round(peak.peak / cap, 3),
                                "health_200_after_s": back_s,
                                "box_after": after,
                            }
                        ),
                        flush=True,
                    )
    finally:
        stop_process(box, limit_s=60)


if __name__ == "__main__":
    main()
