"""`just bench`: the same bursts at each path on the twin, as a table and a chart.

Each (path, burst size) runs against a freshly started server, so one path's memory or
cache never leaks into the next. Round trip is measured by this client; for tickets it
runs from submission until the poll that sees the job done.
"""

import argparse
import asyncio
import json
import platform
import statistics
import threading
import time
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import httpx
import psutil

from app.bench.serverproc import ServerProcess
from app.settings import PROJECT_ROOT, TWIN_MODEL_DIR

PATHS = ("naive", "limited", "batched", "tickets")
URLS = {
    "naive": "/api/naive/predict",
    "limited": "/api/limited/predict",
    "batched": "/api/batched/predict",
    "tickets": "/api/queue/jobs",
}
TERMINAL = {"done", "failed", "expired", "canceled"}


@dataclass
class Outcome:
    status: int  # HTTP status of the submission (0 = transport error)
    round_trip_s: float
    batch_size: int | None = None
    final: str | None = None  # tickets: the job's terminal status


@dataclass
class BurstResult:
    path: str
    clients: int
    counts: dict[str, int]
    p50_s: float
    p95_s: float
    max_s: float
    served: int
    wall_s: float
    throughput_per_s: float
    mean_batch: float | None
    peak_rss_mb: float
    outcomes: list[Outcome] = field(repr=False)


class PeakRss:
    """Samples a process's RSS every few ms on a thread; `.peak` is the highest seen."""

    def __init__(self, pid: int, every_s: float = 0.02) -> None:
        self._process = psutil.Process(pid)
        self._every_s = every_s
        self._stop = threading.Event()
        self.peak = 0
        self._thread = threading.Thread(target=self._sample, name="rss-sampler", daemon=True)

    def __enter__(self) -> "PeakRss":
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    def _sample(self) -> None:
        while not self._stop.is_set():
            try:
                self.peak = max(self.peak, self._process.memory_info().rss)
            except psutil.Error:
                return
            self._stop.wait(self._every_s)


async def fire_one(client: httpx.AsyncClient, path: str, text: str) -> Outcome:
    started = time.perf_counter()
    try:
        response = await client.post(URLS[path], json={"text": text})
    except httpx.HTTPError:
        return Outcome(0, time.perf_counter() - started)
    batch = response.headers.get("X-Batch-Size")
    outcome = Outcome(response.status_code, time.perf_counter() - started, int(batch) if batch else None)
    if path == "tickets" and response.status_code == 202:
        job = response.json()
        while job["status"] not in TERMINAL:
            await asyncio.sleep(0.05)
            job = (await client.get(f"/api/queue/jobs/{job['job_id']}")).json()
        outcome.final = job["status"]
        outcome.round_trip_s = time.perf_counter() - started
    return outcome


async def fire_burst(base_url: str, path: str, texts: list[str]) -> tuple[list[Outcome], float]:
    limits = httpx.Limits(max_connections=len(texts) + 8, max_keepalive_connections=len(texts) + 8)
    async with httpx.AsyncClient(base_url=base_url, timeout=300, limits=limits) as client:
        started = time.perf_counter()
        outcomes = await asyncio.gather(*(fire_one(client, path, t) for t in texts))
        return list(outcomes), time.perf_counter() - started


def summarize(path: str, outcomes: list[Outcome], wall_s: float, peak_rss: int) -> BurstResult:
    counts: dict[str, int] = {}
    for o in outcomes:
        counts[str(o.status)] = counts.get(str(o.status), 0) + 1
    served = [o for o in outcomes if o.status == 200 or o.final == "done"]
    times = sorted(o.round_trip_s for o in served) or [0.0]
    batches = [o.batch_size for o in outcomes if o.batch_size is not None]
    return BurstResult(
        path=path,
        clients=len(outcomes),
        counts=dict(sorted(counts.items())),
        p50_s=statistics.median(times),
        p95_s=times[min(len(times) - 1, round(0.95 * (len(times) - 1)))],
        max_s=times[-1],
        served=len(served),
        wall_s=wall_s,
        throughput_per_s=len(served) / wall_s,
        mean_batch=statistics.fmean(batches) if batches else None,
        peak_rss_mb=peak_rss / 2**20,
        outcomes=outcomes,
    )


def run_burst(model_dir: Path, path: str, clients: int, texts: list[str]) -> BurstResult:
    with ServerProcess(model_dir) as server, PeakRss(server.pid) as rss:
        outcomes, wall_s = asyncio.run(fire_burst(server.url, path, texts[:clients]))
    return summarize(path, outcomes, wall_s, rss.peak)


def markdown_table(results: list[BurstResult]) -> str:
    columns = "path clients 200 202 429 503 other p50_s p95_s max_s served/s mean_batch peak_RSS_MB"
    lines = ["| " + columns.replace(" ", " | ").replace("_", " ") + " |", "|---" + "|---:" * 12 + "|"]
    for r in results:
        known = {"200", "202", "429", "503"}
        other = sum(v for k, v in r.counts.items() if k not in known)
        batch = f"{r.mean_batch:.2f}" if r.mean_batch is not None else "–"
        cells = [r.counts.get(k, 0) for k in ("200", "202", "429", "503")]
        lines.append(
            f"| {r.path} | {r.clients} | {' | '.join(map(str, cells))} | {other} | {r.p50_s:.2f} | {r.p95_s:.2f} "
            f"| {r.max_s:.2f} | {r.throughput_per_s:.2f} | {batch} | {r.peak_rss_mb:.0f} |"
        )
    return "\n".join(lines)


def chart(results: list[BurstResult], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = sorted({r.clients for r in results})
    fig, axes = plt.subplots(1, len(sizes), figsize=(6 * len(sizes), 4), squeeze=False)
    for ax, size in zip(axes[0], sizes, strict=True):
        rows = [r for r in results if r.clients == size]
        for i, r in enumerate(rows):
            served = sorted(o.round_trip_s for o in r.outcomes if o.status == 200 or o.final == "done")
            ax.scatter([i] * len(served), served, s=12, alpha=0.6)
            ax.plot([i - 0.25, i + 0.25], [r.p95_s] * 2, color="black", linewidth=1)
            refused = r.clients - r.served
            ax.annotate(f"refused {refused}", (i, 0), textcoords="offset points", xytext=(0, -28), ha="center")
        ax.set_xticks(range(len(rows)), [r.path for r in rows])
        ax.set_title(f"{size} clients at once: round trip of served requests (bar = p95)")
        ax.set_ylabel("seconds")
        ax.set_ylim(bottom=0)
    fig.tight_layout()
    fig.savefig(out, dpi=90)
    plt.close(fig)


def machine() -> str:
    memory_gib = psutil.virtual_memory().total / 2**30
    return f"{platform.node()} ({psutil.cpu_count()} CPUs, {memory_gib:.0f} GiB, {platform.machine()}, no GPU)"


def model_line(model_dir: Path) -> str:
    manifest = json.loads((model_dir / "manifest.json").read_text(encoding="utf-8"))
    size_mb = manifest.get("size_bytes", 0) / 1e6
    return f"{manifest.get('name')} ({manifest.get('weights')} weights, {size_mb:.0f} MB)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model-dir", type=Path, default=TWIN_MODEL_DIR)
    parser.add_argument("--clients", type=int, nargs="+", default=[12, 50])
    parser.add_argument("--paths", nargs="+", default=list(PATHS), choices=PATHS)
    parser.add_argument("--out", type=Path, default=PROJECT_ROOT / "docs" / "bench")
    args = parser.parse_args()

    samples = json.loads((PROJECT_ROOT / "app" / "data" / "sample_reviews.json").read_text(encoding="utf-8"))
    texts = [s["text"] for s in samples]
    results = []
    for clients in args.clients:
        for path in args.paths:
            result = run_burst(args.model_dir, path, clients, texts)
            print(
                f"{path:8} {clients:3} clients: {result.counts} p50 {result.p50_s:.2f}s p95 {result.p95_s:.2f}s "
                f"served/s {result.throughput_per_s:.2f} peak RSS {result.peak_rss_mb:.0f} MB",
                flush=True,
            )
            results.append(result)

    args.out.mkdir(parents=True, exist_ok=True)
    header = f"Measured {datetime.now(UTC):%Y-%m-%d %H:%M} UTC on {machine()}; model: {model_line(args.model_dir)}."
    (args.out / "bursts.md").write_text(f"{header}\n\n{markdown_table(results)}\n", encoding="utf-8")
    (args.out / "bursts.json").write_text(
        json.dumps({"header": header, "results": [asdict(r) for r in results]}, indent=1), encoding="utf-8"
    )
    chart(results, args.out / "bursts.png")
    print(f"\n{header}\n\n{markdown_table(results)}")


if __name__ == "__main__":
    main()
