"""What idle live-stats sockets cost the box: a lone review's time with N open /api/stats/live pages
and with none (a measurement, not a test).

`python -m tools.live_sockets_cost [--sockets 300] [--reviews 12] [--rounds 2]`: one box (`python -m
app.box`, one core, ~1 s per median review) serving the twin model; then, `rounds` times, `reviews`
sequential ② reviews (each alone on the box) with no socket open, and the same with `sockets` pages
reading the live stats. Reports the medians of each phase (client time and the server's `infer`)
and their ratio. The client keeps off the box's core. Run under `flock /tmp/lab-cpu.lock`.
"""

import argparse
import asyncio
import os
import platform
import statistics
import subprocess
import time
from pathlib import Path

import httpx
from websockets.asyncio.client import ClientConnection, connect

from app.settings import TWIN_MODEL_DIR
from kit.cores import bench_core, keep_off
from kit.measure import server_timing
from kit.serverproc import ServerProcess

SAMPLES = ["가격이 좀 비싸긴 한데 직원분이 친절했어요", "30분 줄 섰는데 단팥빵 품절이라고 해서 화났어요"]


def infer_ms(response: httpx.Response) -> float:
    return server_timing(response.headers.get("Server-Timing"))["infer"]


async def lone_reviews(client: httpx.AsyncClient, n: int, tag: str) -> tuple[list[float], list[float]]:
    """n reviews one after another, each a new text (no cache hit): client ms and server infer ms."""
    walls, infers = [], []
    for i in range(n):
        text = f"{SAMPLES[i % 2]} ({tag} {i}, {time.monotonic_ns()})"
        started = time.perf_counter()
        response = await client.post("/api/limited/predict", json={"text": text})
        walls.append((time.perf_counter() - started) * 1000)
        response.raise_for_status()
        infers.append(infer_ms(response))
    return walls, infers


async def open_pages(url: str, n: int) -> tuple[list[ClientConnection], list[asyncio.Task[None]]]:
    """n live-stats sockets that read every push, as open pages do."""
    sockets = [await connect(url, open_timeout=60) for _ in range(n)]

    async def read(socket: ClientConnection) -> None:
        async for _ in socket:
            pass

    return sockets, [asyncio.create_task(read(s)) for s in sockets]


async def measure(server_url: str, sockets: int, reviews: int, rounds: int) -> dict[str, list[float]]:
    phases: dict[str, list[float]] = {"none wall": [], "none infer": [], "open wall": [], "open infer": []}
    live = server_url.replace("http://", "ws://") + "/api/stats/live"
    async with httpx.AsyncClient(base_url=server_url, timeout=120) as client:
        await lone_reviews(client, 2, "warm")
        for r in range(rounds):
            wall, infer = await lone_reviews(client, reviews, f"none {r}")
            phases["none wall"] += wall
            phases["none infer"] += infer
            pages, readers = await open_pages(live, sockets)
            served = (await client.get("/api/stats")).status_code
            assert served == 200
            wall, infer = await lone_reviews(client, reviews, f"open {r}")
            phases["open wall"] += wall
            phases["open infer"] += infer
            for page in pages:
                await page.close()
            await asyncio.gather(*readers, return_exceptions=True)
    return phases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sockets", type=int, default=300)
    parser.add_argument("--reviews", type=int, default=12)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--model-dir", type=Path, default=TWIN_MODEL_DIR)
    args = parser.parse_args()
    load_before = os.getloadavg()
    started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    with ServerProcess(args.model_dir, box=True) as server:
        core = bench_core()  # after the box started: it must not inherit the client's affinity
        if core is not None:
            keep_off(core)
        phases = asyncio.run(measure(server.url, args.sockets, args.reviews, args.rounds))
    load_after = os.getloadavg()
    cpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    model = next((line.split(":", 1)[1].strip() for line in cpu.splitlines() if line.startswith("Model name")), "?")
    git = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    load = f"load {load_before[0]:.2f} before, {load_after[0]:.2f} after"
    print(f"{started}, {platform.node()}, {model}, commit {git}; {load}")
    print(f"{args.sockets} idle live-stats sockets vs none; {args.rounds} rounds x {args.reviews} lone reviews each")
    medians = {name: statistics.median(values) for name, values in phases.items()}
    for name, value in medians.items():
        print(f"  median {name:<11} {value:8.1f} ms  (min {min(phases[name]):.1f}, max {max(phases[name]):.1f})")
    for kind in ("wall", "infer"):
        print(f"  ratio open/none ({kind}): {medians[f'open {kind}'] / medians[f'none {kind}']:.3f}")


if __name__ == "__main__":
    main()
