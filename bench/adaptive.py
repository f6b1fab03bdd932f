"""`python -m bench.adaptive`: ② limited, ③ batched and ⑤ adaptive under Poisson streams at multiples of the lane.

For each repeat, the lane's one-at-a-time capacity is measured first on the same core (`--one-count`
reviews on ②, each sent when the last is answered); then each (path, multiple) runs against a freshly
started lab on the twin, pinned to one core with `taskset` (bench/peer.py's `PinnedServer`; the
client runs on the other cores), with a Poisson stream at that multiple of the capacity for
`--duration` seconds and clients that give up after 30 s. Per row: served per second (answers
delivered within the sending window) and its ratio to the capacity, p95 of the served, p99 of the
refusals. Appends one JSON line per row to docs/bench/adaptive.jsonl and prints a Markdown table.
Then, per repeat, each path takes bursts (`--bursts`, all sent at once to a fresh lab): when the first
answer came, how many were served, the slowest served, p99 of the refusals; one JSON line each in
docs/bench/adaptive-bursts.jsonl. Client-side tooling: the server never imports this.
"""

import argparse
import asyncio
import json
import signal
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from app.engine.callshape_cache import cpu_model
from app.paths.registry import spec
from app.settings import PROJECT_ROOT, TWIN_MODEL_DIR
from bench.adaptive_curve import CURVE, tables
from bench.adaptive_curve import write as write_curve
from bench.peer import PinnedServer, measured_capacity
from kit.cores import bench_core, keep_off
from kit.host import machine
from kit.load import LoadConfig, LoadResult, percentile, run_load, summarize

OUT = PROJECT_ROOT / "docs" / "bench" / "adaptive.jsonl"
BURSTS_OUT = PROJECT_ROOT / "docs" / "bench" / "adaptive-bursts.jsonl"
COMPARED = ("limited", "batched", "adaptive")  # the lane's direct paths that refuse, batch, adapt: scenario data
MULTIPLES = (0.5, 1.0, 2.0, 5.0)
BURSTS = (12, 50)
CLIENT_TIMEOUT_S = 30.0


def measured(path: str, config: LoadConfig, args: argparse.Namespace, scratch: Path) -> LoadResult:
    with PinnedServer(path, args.model_dir, args.core, scratch, Path(sys.executable)) as server:
        config.url = server.url
        return asyncio.run(run_load(config))


def stream(path: str, rate: float, args: argparse.Namespace, scratch: Path) -> dict[str, Any]:
    """One Poisson stream at `rate` on a fresh lab; the summary's numbers this benchmark reports."""
    config = LoadConfig(
        url="",
        path=spec(path).route,
        mode="open",
        rate=rate,
        duration_s=args.duration,
        drain_s=CLIENT_TIMEOUT_S + 10,
        seed=args.seed,
        poisson=True,
        timeout_s=CLIENT_TIMEOUT_S,
    )
    result = measured(path, config, args, scratch)
    summary = summarize(result)
    ok = [o.latency_s for o in result.outcomes if o.category == "ok"]
    refused = [o.latency_s for o in result.outcomes if o.category.startswith("rejected")]
    return {
        "counts": summary["counts"],
        "served_per_s": summary["useful_per_s"],
        "p95_served_s": percentile(ok, 95),
        "p99_refused_s": percentile(refused, 99),
        "lane_share": summary["useful_lane_share"],  # of the window, on answers delivered: blind to the mix
        "adaptive": result.server_after.get("stats", {}).get("paths", {}).get("adaptive"),
    }


def burst(path: str, size: int, args: argparse.Namespace, scratch: Path) -> dict[str, Any]:
    """`size` requests at once on a fresh lab, each client giving up after 30 s."""
    config = LoadConfig(
        url="",
        path=spec(path).route,
        mode="open",
        burst=size,
        every_s=1e9,
        duration_s=1.0,
        drain_s=CLIENT_TIMEOUT_S + 10,
        seed=args.seed,
        timeout_s=CLIENT_TIMEOUT_S,
    )
    result = measured(path, config, args, scratch)
    ok = [o.latency_s for o in result.outcomes if o.category == "ok"]
    refused = [o.latency_s for o in result.outcomes if o.category.startswith("rejected")]
    return {
        "counts": summarize(result)["counts"],
        "first_answer_s": min(ok, default=None),
        "served": len(ok),
        "slowest_served_s": max(ok, default=None),
        "p99_refused_s": percentile(refused, 99),
    }


def row_line(row: dict[str, Any]) -> str:
    def num(value: float | None, digits: int = 2) -> str:
        return "–" if value is None else f"{value:.{digits}f}"

    counts = " ".join(f"{k} {v}" for k, v in row["counts"].items())
    return (
        f"| {spec(row['path']).label} | {row['multiple']:g}× ({row['rate_per_s']:.2f}/s) | {row['run']} "
        f"| {num(row['served_per_s'])} | {num(row['served_vs_capacity'])} | {num(row['p95_served_s'])} "
        f"| {num(row['p95_served_s'] and row['p95_served_s'] / row['one_review_s'], 1)} "
        f"| {num(row['p99_refused_s'], 3)} | {counts} |"
    )


def table(rows: list[dict[str, Any]]) -> str:
    head = (
        "| path | offered | run | served/s | ÷ capacity | p95 served (s) | ÷ one review | p99 refused (s) | answers |\n"
        "|---|---|---|---|---|---|---|---|---|"
    )
    return "\n".join([head, *(row_line(r) for r in rows)])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model-dir", type=Path, default=TWIN_MODEL_DIR)
    parser.add_argument("--core", type=int, default=bench_core(), help="the one CPU the lab is pinned to")
    parser.add_argument("--paths", nargs="+", default=list(COMPARED), choices=list(COMPARED))
    parser.add_argument("--multiples", type=float, nargs="+", default=list(MULTIPLES), help="of the capacity")
    parser.add_argument("--duration", type=float, default=60.0, help="seconds each stream sends")
    parser.add_argument("--bursts", type=int, nargs="*", default=list(BURSTS), help="requests sent at once")
    parser.add_argument("--bursts-out", type=Path, default=BURSTS_OUT, help="JSON lines, appended")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--one-count", type=int, default=12, help="reviews one at a time for the capacity")
    parser.add_argument("--seed", type=int, default=1, help="which reviews the client sends (the same to every path)")
    parser.add_argument("--out", type=Path, default=OUT, help="JSON lines, appended")
    args = parser.parse_args(argv)
    if args.core is None:
        parser.error("pinning the lab to one core needs Linux (sched_setaffinity, taskset)")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a `timeout` must still stop the pinned servers
    keep_off(args.core)
    started = datetime.now(UTC)
    host = f"{machine()} ({cpu_model()}), lab pinned to core {args.core}, one onnxruntime thread"
    rows: list[dict[str, Any]] = []
    args.out.parent.mkdir(parents=True, exist_ok=True)
    for run in range(1, args.repeats + 1):
        capacity, one_s = measured_capacity(args.model_dir, args.core, args.one_count, args.seed)
        for multiple in args.multiples:
            order = args.paths[run % len(args.paths) :] + args.paths[: run % len(args.paths)]  # each goes first
            for path in order:
                with tempfile.TemporaryDirectory() as scratch:
                    measured = stream(path, multiple * capacity, args, Path(scratch))
                row = {
                    "date": started.isoformat(timespec="seconds"),
                    "host": host,
                    "path": path,
                    "multiple": multiple,
                    "rate_per_s": round(multiple * capacity, 3),
                    "duration_s": args.duration,
                    "client_timeout_s": CLIENT_TIMEOUT_S,
                    "run": run,
                    "capacity_per_s": round(capacity, 3),
                    "one_review_s": round(one_s, 3),
                    **measured,
                    "served_vs_capacity": round(measured["served_per_s"] / capacity, 3),
                    "seed": args.seed,
                }
                rows.append(row)
                with args.out.open("a", encoding="utf-8") as out:
                    out.write(json.dumps(row, ensure_ascii=False) + "\n")
                print(row_line(row), flush=True)
        for size in args.bursts:
            for path in args.paths:
                with tempfile.TemporaryDirectory() as scratch:
                    fired = burst(path, size, args, Path(scratch))
                line = {"date": started.isoformat(timespec="seconds"), "host": host, "path": path, "burst": size}
                line |= {"run": run, "one_review_s": round(one_s, 3), **fired, "seed": args.seed}
                with args.bursts_out.open("a", encoding="utf-8") as out:
                    out.write(json.dumps(line, ensure_ascii=False) + "\n")
                print(json.dumps(line, ensure_ascii=False), flush=True)
    print(f"\nMeasured {started:%Y-%m-%d %H:%M} UTC on {host}; Poisson streams, {CLIENT_TIMEOUT_S:g} s client timeout.")
    print(table(rows))
    # The page's curve follows the committed rows only; rows written elsewhere get a curve beside them.
    curve = CURVE if args.out == OUT else args.out.with_suffix(".curve.json")
    print(f"\n{curve}, the cost curve, from the newest run's medians:")
    print(tables(write_curve(args.out, args.bursts_out, curve)))


if __name__ == "__main__":
    main()
