"""`python -m bench.adaptive`: ② limited, ③ batched and ⑤ adaptive under Poisson streams at multiples of the lane.

For each repeat, the lane's cost per review is measured first on the same core: `--one-count` reviews of
the streams' pool (and, when a mix has long reviews, 3 long ones) on ②, each sent when the last is
answered, and a fit of seconds on tokens through them (kit/work.py); the capacity of a mix is 1 / the
mean fitted cost over what its streams offer. Then each (mix, multiple, path) runs against a freshly
started lab on the twin, pinned to one core with `taskset` (bench/peer.py's `PinnedServer`; the
client runs on the other cores), with a Poisson stream at that multiple of the capacity for
`--duration` seconds and clients that give up after 30 s. `--long-share 0 0.1` runs every stream
twice: with the pool's reviews only, and with 10 % of `--long-chars`-character reviews mixed in.
Per row: served per second (answers delivered within the sending window) and its ratio to the
capacity; served work (those answers' one-at-a-time costs summed over the window: the share of the
lane's time they are worth, which a path cannot raise by serving the short reviews); the offered and
served mean length in characters and tokens; p95 of the served, p99 of the refusals; and, from ⑤'s
/api/stats, how many admitted requests were answered after their promise (`late`, where the server
counts it). Appends one JSON line per row to docs/bench/adaptive.jsonl and prints a Markdown table.
Then, per repeat and mix, each path takes bursts (`--bursts`, all sent at once to a fresh lab): when
the first answer came, how many were served and their work in reviews of the mix, the slowest served,
p99 of the refusals; one JSON line each in docs/bench/adaptive-bursts.jsonl. Rows written before
issue 45 lack the work and length fields (their capacity was the mean of 12 reviews measured); readers
take them without. Client-side tooling: the server never imports this.
"""

import argparse
import asyncio
import json
import os
import signal
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from app.engine.callshape_cache import cpu_model
from app.paths.registry import spec
from app.settings import PROJECT_ROOT, TWIN_MODEL_DIR, Settings
from bench.adaptive_curve import CURVE, tables
from bench.adaptive_curve import write as write_curve
from bench.peer import LONG_MEASURED, PinnedServer, lane_cost, measured_one_at_a_time
from kit.cores import bench_core, keep_off
from kit.host import machine
from kit.load import LoadConfig, LoadResult, percentile, run_load, summarize
from kit.work import Lengths, WorkMeter, in_window, mix_sample, mixed

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


def late(result: LoadResult, path: str) -> int | None:
    """The path's count of admitted requests answered after their promise, where its /api/stats has one (⑤'s)."""
    details = result.server_after.get("stats", {}).get("paths", {}).get(path) or {}
    found = details.get("late")
    return None if found is None else int(found)


def stream(
    path: str, rate: float, share: float, meter: WorkMeter, args: argparse.Namespace, scratch: Path
) -> dict[str, Any]:
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
        long_share=share,
        long_chars=args.long_chars,
    )
    return stream_numbers(path, measured(path, config, args, scratch), meter)


def stream_numbers(path: str, result: LoadResult, meter: WorkMeter) -> dict[str, Any]:
    """A stream's row: answers in the window, counted and weighed by their cost; latencies; ⑤'s promises."""
    summary = summarize(result)
    window = result.config.duration_s
    ok = [o for o in result.outcomes if o.category == "ok"]
    within, straddling = in_window(result)
    refused = [o.latency_s for o in result.outcomes if o.category.startswith("rejected")]
    return {
        "counts": summary["counts"],
        "served_per_s": summary["useful_per_s"],
        **meter.row([o.text for o in result.outcomes if o.text is not None], within, window, straddling),
        "p95_served_s": percentile([o.latency_s for o in ok], 95),
        "p99_refused_s": percentile(refused, 99),
        "lane_share": summary["useful_lane_share"],  # of the window, on answers delivered: blind to the mix
        "late": late(result, path),
        "adaptive": result.server_after.get("stats", {}).get("paths", {}).get("adaptive"),
    }


def burst(
    path: str, size: int, share: float, meter: WorkMeter, args: argparse.Namespace, scratch: Path
) -> dict[str, Any]:
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
        long_share=share,
        long_chars=args.long_chars,
    )
    return burst_numbers(path, measured(path, config, args, scratch), meter)


def burst_numbers(path: str, result: LoadResult, meter: WorkMeter) -> dict[str, Any]:
    ok = [o for o in result.outcomes if o.category == "ok"]
    served = [o.latency_s for o in ok]
    refused = [o.latency_s for o in result.outcomes if o.category.startswith("rejected")]
    work = meter.row([o.text for o in result.outcomes if o.text], [o.text for o in ok if o.text], 0.0)
    return {
        "counts": summarize(result)["counts"],
        "first_answer_s": min(served, default=None),
        "served": len(ok),
        # A burst has no window to spread its work over: what the served were worth, in reviews of the mix.
        "served_work_reviews": work["served_work_reviews"],
        **{k: v for k, v in work.items() if k.endswith(("_chars", "_tokens"))},
        "slowest_served_s": max(served, default=None),
        "p99_refused_s": percentile(refused, 99),
        "late": late(result, path),
    }


def capacity_line(run: int, share: float, meter: WorkMeter) -> str:
    """What a repeat measured before its streams: the fit, and the capacity it gives over the mix."""
    fit = meter.cost.fit
    return (
        f"run {run}, {share:.0%} long: one review {meter.cost.one_review_s:.3f} s over the mix offered, capacity "
        f"{meter.cost.capacity_per_s:.3f}/s (fit on {fit.samples} reviews one at a time: {fit.a_s:.3f} + "
        f"{fit.b_s:.5f}·x + {fit.c_s:.2e}·x² s, x in {fit.unit}, worst error {fit.worst_error:.0%}; "
        f"their plain mean {meter.cost.measured_mean_s:.3f} s)"
    )


def num(value: float | None, digits: int = 2) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def row_line(row: dict[str, Any]) -> str:
    """One row; a row from before issue 45 has no work, lengths, mix or `late`: dashes."""
    counts = " ".join(f"{k} {v}" for k, v in row["counts"].items())
    mix = f"{row['long_share']:.0%}" if row.get("long_share") is not None else "–"
    chars = f"{num(row.get('served_mean_chars'), 0)} / {num(row.get('offered_mean_chars'), 0)}"
    tokens = f"{num(row.get('served_mean_tokens'), 0)} / {num(row.get('offered_mean_tokens'), 0)}"
    late = "–" if row.get("late") is None else str(row["late"])
    return (
        f"| {spec(row['path']).label} | {mix} | {row['multiple']:g}× ({row['rate_per_s']:.2f}/s) | {row['run']} "
        f"| {num(row['served_per_s'])} | {num(row['served_vs_capacity'])} | {num(row.get('served_work'))} "
        f"| {chars} | {tokens} | {num(row['p95_served_s'])} "
        f"| {num(row['p95_served_s'] and row['p95_served_s'] / row['one_review_s'], 1)} "
        f"| {num(row['p99_refused_s'], 3)} | {late} | {counts} |"
    )


def table(rows: list[dict[str, Any]]) -> str:
    head = (
        "| path | long | offered | run | served/s | ÷ capacity | served work | chars served / offered "
        "| tokens served / offered | p95 served (s) | ÷ one review | p99 refused (s) | late | answers |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
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
    parser.add_argument(
        "--one-count", type=int, default=24, help="reviews of the pool sent one at a time to fit each review's cost"
    )
    parser.add_argument(
        "--long-share",
        type=float,
        nargs="+",
        default=[0.0],
        help="share of long reviews mixed into the streams and bursts; several: each stream once per share",
    )
    parser.add_argument("--long-chars", type=int, default=2000, help="characters of each long review")
    parser.add_argument("--seed", type=int, default=1, help="which reviews the client sends (the same to every path)")
    parser.add_argument("--out", type=Path, default=OUT, help="JSON lines, appended")
    parser.add_argument(
        "--adaptive-target",
        type=float,
        help="⑤'s target in reviews (LAB_ADAPTIVE_TARGET_REVIEWS) for every lab started: a point on the frontier "
        "(its drain bound: LAB_ADAPTIVE_DRAIN_REVIEWS in the environment; both go into every row)",
    )
    args = parser.parse_args(argv)
    if args.core is None:
        parser.error("pinning the lab to one core needs Linux (sched_setaffinity, taskset)")
    if not 0 < args.long_chars <= Settings().max_text_chars:
        parser.error(f"--long-chars: the lab takes reviews of 1 to {Settings().max_text_chars} characters")
    if any(not 0 <= share < 1 for share in args.long_share):
        parser.error("--long-share: a share from 0 up to (not including) 1")
    if args.adaptive_target is not None:
        os.environ["LAB_ADAPTIVE_TARGET_REVIEWS"] = str(args.adaptive_target)  # the pinned labs inherit it
    bounds = Settings()  # what every lab started here runs ⑤ with
    target = {"adaptive_target_reviews": bounds.adaptive_target_reviews}
    target["adaptive_drain_reviews"] = bounds.adaptive_drain_reviews
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a `timeout` must still stop the pinned servers
    keep_off(args.core)
    started = datetime.now(UTC)
    host = f"{machine()} ({cpu_model()}), lab pinned to core {args.core}, one onnxruntime thread"
    lengths = Lengths(args.model_dir)
    rows: list[dict[str, Any]] = []
    args.out.parent.mkdir(parents=True, exist_ok=True)
    for run in range(1, args.repeats + 1):
        longs = LONG_MEASURED if any(args.long_share) else 0
        alone = measured_one_at_a_time(
            args.model_dir, args.core, mixed(args.seed, args.one_count, longs, args.long_chars)
        )
        for share in args.long_share:
            meter = WorkMeter(lengths, lane_cost(alone, lengths, mix_sample(args.seed, share, args.long_chars)))
            capacity, one_s = meter.cost.capacity_per_s, meter.cost.one_review_s
            print(capacity_line(run, share, meter), flush=True)
            the_mix = {
                "long_share": share,
                "long_chars": args.long_chars,
                "one_review_s": round(one_s, 3),
                # The plain mean of the reviews measured one at a time (what capacity was before issue 45).
                "measured_mean_s": round(meter.cost.measured_mean_s, 3),
                "cost_fit": meter.cost.fit.row(),
                **target,
            }
            for multiple in args.multiples:
                order = args.paths[run % len(args.paths) :] + args.paths[: run % len(args.paths)]  # each goes first
                for path in order:
                    with tempfile.TemporaryDirectory() as scratch:
                        measured = stream(path, multiple * capacity, share, meter, args, Path(scratch))
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
                        **the_mix,
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
                        fired = burst(path, size, share, meter, args, Path(scratch))
                    line = {"date": started.isoformat(timespec="seconds"), "host": host, "path": path, "burst": size}
                    line |= {"run": run, "long_share": share, "long_chars": args.long_chars}
                    line |= target
                    line |= {"one_review_s": round(one_s, 3), **fired, "seed": args.seed}
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
