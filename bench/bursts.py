"""`just bench`: the same bursts at each path on the twin, as a table and a chart.

Each (path, burst size) runs against a freshly started server, so one path's memory or
cache never leaks into the next. By default that server is the box `just serve` runs
(`python -m app.box`: one core, ~1 s per median review, the 1.2 GiB cap, restarts), so the
table is what a student sees; `--bare` measures a plain uvicorn at the host's own speed.
Round trip is measured by this client; for tickets it runs from submission until the poll
that sees the job done.
"""

import argparse
import asyncio
import json
import os
import statistics
import time
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import httpx

from app.paths.registry import PATHS as REGISTERED
from app.settings import PROJECT_ROOT, TWIN_MODEL_DIR, Settings
from kit.fire import BurstReply, fire_burst
from kit.host import machine, model_line
from kit.measure import PeakRss
from kit.serverproc import ServerProcess

PATHS = tuple(p.name for p in REGISTERED)


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
    outcomes: list[BurstReply] = field(repr=False)
    box_deaths: int | None = None  # deaths of the box during the burst (None: a bare server)
    achieved_s: float | None = None  # the box's calibrated seconds per median review


def summarize(path: str, outcomes: list[BurstReply], wall_s: float, peak_rss: int) -> BurstResult:
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


def box_now(url: str) -> tuple[int, float | None]:
    """The box's deaths so far and its achieved seconds per median review (after a death, when it is back)."""
    deadline = time.monotonic() + 180
    while True:
        try:
            deaths = int(httpx.get(f"{url}/api/stats", timeout=5).json()["box"]["deaths"])
            calibration = httpx.get(f"{url}/api/model", timeout=5).json()["box"].get("calibration") or {}
            return deaths, calibration.get("achieved_s")
        except (httpx.HTTPError, KeyError, ValueError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def run_burst(model_dir: Path, path: str, clients: int, texts: list[str], box: bool = True) -> BurstResult:
    with ServerProcess(model_dir, box=box) as server:
        before = box_now(server.url) if box else (0, None)
        with PeakRss(server.server_pids) as rss:
            outcomes, wall_s = asyncio.run(fire_burst(server.url, path, texts[:clients]))
        after = box_now(server.url) if box else (0, None)
    result = summarize(path, outcomes, wall_s, rss.peak)
    if box:
        result.box_deaths, result.achieved_s = after[0] - before[0], before[1]
    return result


def seconds(value: float, r: BurstResult) -> str:
    """A latency of the served requests; none served (every connection lost) has none."""
    return f"{value:.2f}" if r.served else "–"


def from_json(path: Path) -> tuple[str, list[BurstResult]]:
    """The header and results a run wrote to bursts.json, to redraw its table and chart."""
    data = json.loads(path.read_text(encoding="utf-8"))
    results = []
    for raw in data["results"]:
        outcomes = [BurstReply(**o) for o in raw.pop("outcomes")]
        results.append(BurstResult(**raw, outcomes=outcomes))
    return str(data["header"]), results


def markdown_table(results: list[BurstResult]) -> str:
    columns = "path clients 200 202 429 503 other p50_s p95_s max_s served/s mean_batch peak_RSS_MB box_deaths"
    lines = ["| " + columns.replace(" ", " | ").replace("_", " ") + " |", "|---" + "|---:" * 13 + "|"]
    for r in results:
        known = {"200", "202", "429", "503"}
        other = sum(v for k, v in r.counts.items() if k not in known)
        batch = f"{r.mean_batch:.2f}" if r.mean_batch is not None else "–"
        cells = [r.counts.get(k, 0) for k in ("200", "202", "429", "503")]
        lines.append(
            f"| {r.path} | {r.clients} | {' | '.join(map(str, cells))} | {other} | {seconds(r.p50_s, r)} "
            f"| {seconds(r.p95_s, r)} | {seconds(r.max_s, r)} | {r.throughput_per_s:.2f} | {batch} "
            f"| {r.peak_rss_mb:.0f} | {'–' if r.box_deaths is None else r.box_deaths} |"
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
            lost = sum(o.status == 0 for o in r.outcomes)  # the connection was lost: in the box, a death
            refused = r.clients - r.served - lost
            label = f"refused {refused}" + (f", lost {lost}" if lost else "")
            ax.annotate(label, (i, 0), textcoords="offset points", xytext=(0, -28), ha="center")
        ax.set_xticks(range(len(rows)), [r.path for r in rows])
        ax.set_title(f"{size} clients at once: round trip of served requests (bar = p95)")
        ax.set_ylabel("seconds")
        ax.set_ylim(bottom=0)
    fig.tight_layout()
    fig.savefig(out, dpi=90)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model-dir", type=Path, default=TWIN_MODEL_DIR)
    parser.add_argument("--clients", type=int, nargs="+", default=[12, 50])
    parser.add_argument("--paths", nargs="+", default=list(PATHS), choices=PATHS)
    parser.add_argument("--out", type=Path, default=PROJECT_ROOT / "docs" / "bench")
    parser.add_argument("--bare", action="store_true", help="a plain uvicorn at the host's speed, not the box")
    parser.add_argument("--render-only", action="store_true", help="redraw bursts.md and the chart from bursts.json")
    args = parser.parse_args()
    if args.render_only:
        header, results = from_json(args.out / "bursts.json")
        (args.out / "bursts.md").write_text(f"{header}\n\n{markdown_table(results)}\n", encoding="utf-8")
        chart(results, args.out / "bursts.png")
        return

    load_at_start, started_at = os.getloadavg()[0], datetime.now(UTC)
    samples = json.loads((PROJECT_ROOT / "app" / "data" / "sample_reviews.json").read_text(encoding="utf-8"))
    texts = [s["text"] for s in samples]
    results = []
    for clients in args.clients:
        for path in args.paths:
            result = run_burst(args.model_dir, path, clients, texts, box=not args.bare)
            print(
                f"{path:8} {clients:3} clients: {result.counts} p50 {result.p50_s:.2f}s p95 {result.p95_s:.2f}s "
                f"served/s {result.throughput_per_s:.2f} peak RSS {result.peak_rss_mb:.0f} MB "
                f"box deaths {result.box_deaths} achieved {result.achieved_s}",
                flush=True,
            )
            results.append(result)

    args.out.mkdir(parents=True, exist_ok=True)
    where = (
        "a bare uvicorn at the host's own speed"
        if args.bare
        else "the box (`python -m app.box`: 1 core, ~1 s per median review by a CPU quota, "
        f"{Settings().memory_cap_bytes / 2**30:g} GiB cap, restarts)"
    )
    header = (
        f"Measured from {started_at:%Y-%m-%d %H:%M} UTC on {machine()} (1-min load average {load_at_start:.2f} "
        f"at the start), on {where}; "
        f"model: {model_line(args.model_dir)}."
    )
    (args.out / "bursts.md").write_text(f"{header}\n\n{markdown_table(results)}\n", encoding="utf-8")
    (args.out / "bursts.json").write_text(
        json.dumps({"header": header, "results": [asdict(r) for r in results]}, indent=1), encoding="utf-8"
    )
    chart(results, args.out / "bursts.png")
    print(f"\n{header}\n\n{markdown_table(results)}")


if __name__ == "__main__":
    main()
