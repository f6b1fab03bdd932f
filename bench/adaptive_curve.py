"""`python -m bench.adaptive_curve`: the page's cost curve for ②③⑤ (and the peers), from the committed benchmark rows.

Reads docs/bench/adaptive.jsonl and adaptive-bursts.jsonl (written by `python -m bench.adaptive`), keeps
the newest run (rows sharing its `date`), and takes the median over its repeats of each (path, offered
multiple): served per second ÷ the lane's one-at-a-time capacity, served work (the served reviews'
one-at-a-time cost over the window, kit/work.py), the served and offered mean length, p95 of the served
÷ one review's time, and the shares refused and given up; answers after their promise (⑤'s `late`) are
summed over the runs. A run with long reviews mixed in (`--long-share 0 0.1`) has one set per mix: the
smallest share is the figure's, the others are `long_mixes`. Rows from before issue 45 have no work,
lengths or mix: their points say None. `--peers` adds Infinity's and LitServe's open streams from a
`bench.peer` report, counted the same way (within the sending window, over that run's measured capacity).
Writes static/adaptive-curve.json (drawn by static/js/costcurve.js)
and prints the Markdown tables docs/adaptive.md quotes, so the page and the docs show the same medians.
`bench.adaptive` runs this at its end; run it alone to redraw from the committed rows.
"""

import argparse
import json
import re
import statistics
from datetime import datetime
from pathlib import Path
from typing import Any

from app.paths.registry import spec
from app.settings import PROJECT_ROOT
from kit.host import host_ko

STREAMS = PROJECT_ROOT / "docs" / "bench" / "adaptive.jsonl"
BURSTS = PROJECT_ROOT / "docs" / "bench" / "adaptive-bursts.jsonl"
CURVE = PROJECT_ROOT / "static" / "adaptive-curve.json"


def newest(path: Path, since: str | None = None) -> list[dict[str, Any]]:
    """The rows of the newest run in a JSON-lines file (one `date` per run), or every run from `since` on (an
    ISO date-time: a measurement made in several invocations on one host, each measuring its own capacity)."""
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    if not rows:
        return []
    if since is not None:
        return [row for row in rows if row["date"] >= since]
    latest = max(row["date"] for row in rows)
    return [row for row in rows if row["date"] == latest]


def median(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return statistics.median(known) if known else None


def rounded(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)


def share_of(row: dict[str, Any]) -> float:
    """The long-review share a row's reviews were drawn with (0 before the mix existed)."""
    return float(row.get("long_share") or 0.0)


def stream_point(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """One (path, multiple): medians over the repeats; shares of what was sent."""

    def share(row: dict[str, Any], prefix: str) -> float:
        counts = row["counts"]
        return float(sum(v for k, v in counts.items() if k.startswith(prefix)) / max(1, sum(counts.values())))

    def middle(key: str, digits: int) -> float | None:
        return rounded(median([r.get(key) for r in rows]), digits)

    lates = [r["late"] for r in rows if r.get("late") is not None]
    return {
        "path": rows[0]["path"],
        "multiple": rows[0]["multiple"],
        "runs": len(rows),
        "served_vs_capacity": rounded(median([r["served_vs_capacity"] for r in rows]), 3),
        "served_work": middle("served_work", 3),
        "served_work_straddling": middle("served_work_straddling", 3),  # cut off by the window's end (kit/work.py)
        "offered_work": middle("offered_work", 3),
        "offered_mean_chars": middle("offered_mean_chars", 1),
        "served_mean_chars": middle("served_mean_chars", 1),
        "offered_mean_tokens": middle("offered_mean_tokens", 1),
        "served_mean_tokens": middle("served_mean_tokens", 1),
        "p95_reviews": rounded(median([r["p95_served_s"] and r["p95_served_s"] / r["one_review_s"] for r in rows]), 2),
        "p99_refused_s": rounded(median([r["p99_refused_s"] for r in rows]), 3),
        "refused_share": round(statistics.median(share(r, "rejected") for r in rows), 3),
        "gave_up_share": round(statistics.median(share(r, "client_timeout") for r in rows), 3),
        "late": sum(lates) if lates else None,  # over every run: one late answer is a promise broken
    }


def burst_point(rows: list[dict[str, Any]]) -> dict[str, Any]:
    lates = [r["late"] for r in rows if r.get("late") is not None]
    return {
        "path": rows[0]["path"],
        "burst": rows[0]["burst"],
        "runs": len(rows),
        "served": statistics.median(r["served"] for r in rows),
        "served_work_reviews": rounded(median([r.get("served_work_reviews") for r in rows]), 2),
        "offered_mean_chars": rounded(median([r.get("offered_mean_chars") for r in rows]), 1),
        "served_mean_chars": rounded(median([r.get("served_mean_chars") for r in rows]), 1),
        "first_answer_s": rounded(median([r["first_answer_s"] for r in rows]), 2),
        "slowest_served_s": rounded(median([r["slowest_served_s"] for r in rows]), 1),
        "p99_refused_s": rounded(median([r["p99_refused_s"] for r in rows]), 3),
        "late": sum(lates) if lates else None,
    }


def grouped(rows: list[dict[str, Any]], key: str) -> list[list[dict[str, Any]]]:
    groups: dict[tuple[str, float], list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault((row["path"], row[key]), []).append(row)
    return [groups[k] for k in sorted(groups, key=lambda k: (spec(k[0]).number, k[1]))]


def mix(streams: list[dict[str, Any]], bursts: list[dict[str, Any]]) -> dict[str, Any]:
    """One mix's medians: its capacity, one review's time over it, and its points."""
    chars = [r["long_chars"] for r in streams if r.get("long_chars") is not None]
    fitted = [r["cost_fit"]["samples"] for r in streams if r.get("cost_fit")]
    return {
        "long_share": share_of(streams[0]),
        "long_chars": chars[0] if chars else None,
        # Over the mix offered, from a fit on reviews measured one at a time (None: the plain mean of 12 measured).
        "cost_fit_samples": statistics.median(fitted) if fitted else None,
        "one_review_s": round(statistics.median(r["one_review_s"] for r in streams), 3),
        "capacity_per_s": round(statistics.median(r["capacity_per_s"] for r in streams), 3),
        "streams": [stream_point(g) for g in grouped(streams, "multiple")],
        "bursts": [burst_point(g) for g in grouped(bursts, "burst")],
    }


def curve(streams: list[dict[str, Any]], bursts: list[dict[str, Any]]) -> dict[str, Any]:
    """What the page draws: the newest run's medians, with when, where and how they were measured."""
    if not streams:
        raise ValueError("no stream rows: run `python -m bench.adaptive` first")
    started = datetime.fromisoformat(streams[0]["date"])
    core = re.search(r"pinned to core (\d+)", streams[0]["host"])
    shares = sorted({share_of(r) for r in streams})
    mixes = [
        mix([r for r in streams if share_of(r) == share], [b for b in bursts if share_of(b) == share])
        for share in shares
    ]
    return {
        "date": f"{started:%Y-%m-%d}",
        "time_utc": f"{started:%H:%M}",
        "host": streams[0]["host"],
        "host_ko": host_ko(streams[0]["host"]),
        "core": int(core[1]) if core else None,
        "runs": len({r["run"] for r in streams}),
        "duration_s": streams[0]["duration_s"],
        "client_timeout_s": streams[0]["client_timeout_s"],
        **mixes[0],
        "long_mixes": mixes[1:],
    }


PEERS = {"Infinity": "infinity", "LitServe": "litserve"}  # the peers drawn beside ②③⑤, by their server names' start


def peer_points(report: Path) -> dict[str, Any]:
    """Infinity's and LitServe's open streams in a `bench.peer` report, as points like ②③⑤'s: answers and work
    within the sending window (its rows' `served_in_window`, counted as bench.adaptive counts), each over the
    capacity that run measured on its own core. Rows from before the window was counted are left out."""
    data = json.loads(report.read_text(encoding="utf-8"))
    capacity = float(data["capacity_per_s"])
    groups: dict[tuple[str, float], list[dict[str, Any]]] = {}
    for row in data["rows"]:
        name = next((key for prefix, key in PEERS.items() if row["server"].startswith(prefix)), None)
        multiple = re.match(r"open ([\d.]+)× .*, ([\d.]+) s,", row["scenario"])  # "open 2× Poisson (2.31/s, 60 s, …)"
        if name is not None and multiple is not None and row.get("served_in_window") is not None:
            groups.setdefault((name, float(multiple[1])), []).append(row | {"window_s": float(multiple[2])})

    def point(rows: list[dict[str, Any]], name: str, multiple: float) -> dict[str, Any]:
        window_s = float(rows[0]["window_s"])

        def share(row: dict[str, Any], prefix: str) -> float:
            refused = sum(v for k, v in row["not_served_by"].items() if k.startswith(prefix))
            return float(refused) / max(1, int(row["sent"]))

        def middle(key: str, digits: int) -> float | None:
            return rounded(median([r.get(key) for r in rows]), digits)

        return {
            "path": name,
            "label": rows[0]["server"],
            "multiple": multiple,
            "runs": len(rows),
            "served_vs_capacity": round(
                statistics.median(r["served_in_window"] for r in rows) / window_s / capacity, 3
            ),
            "served_work": middle("served_work_in_window", 3),
            "offered_mean_chars": middle("offered_mean_chars", 1),
            "served_mean_chars": middle("served_mean_chars", 1),
            "p95_reviews": rounded(median([r["p95_s"] and r["p95_s"] * capacity for r in rows]), 2),
            "p99_refused_s": None,
            "refused_share": round(statistics.median(share(r, "rejected") for r in rows), 3),
            "gave_up_share": round(statistics.median(share(r, "client_timeout") for r in rows), 3),
            "late": None,
        }

    measured = re.match(r"Measured (\d{4}-\d{2}-\d{2}) ([\d:]+)", data["header"])
    return {
        "source": str(report.relative_to(PROJECT_ROOT) if report.is_relative_to(PROJECT_ROOT) else report),
        "date": measured[1] if measured else None,
        "time_utc": measured[2] if measured else None,
        "capacity_per_s": round(capacity, 3),
        "one_review_s": round(1 / capacity, 3),
        "streams": [
            point(groups[k], *k) for k in sorted(groups, key=lambda k: (list(PEERS.values()).index(k[0]), k[1]))
        ],
    }


def tables(data: dict[str, Any]) -> str:
    def num(value: float | None, digits: int) -> str:
        return "–" if value is None else f"{value:.{digits}f}"

    def late(value: int | None) -> str:
        return "–" if value is None else str(value)

    def lengths(point: dict[str, Any]) -> str:
        served, offered = point.get("served_mean_chars"), point.get("offered_mean_chars")
        return "–" if served is None and offered is None else f"{num(served, 0)} / {num(offered, 0)}"

    lines = [
        f"Medians of {data['runs']} runs from {data['date']} {data['time_utc']} UTC on {data['host']}.",
    ]
    if data.get("peers"):
        peers = data["peers"]
        lines.append(
            f"Infinity and LitServe: {peers['source']} ({peers['date']} {peers['time_utc']} UTC), within each "
            f"stream's window, over the capacity that run measured ({peers['capacity_per_s']:.3f} reviews/s)."
        )
    for one in [data, *data.get("long_mixes", [])]:
        share = one.get("long_share") or 0.0
        mixed = f"{share:.0%} of the reviews {one.get('long_chars') or 0:,} characters long" if share else "pool only"
        how = "the plain mean of the reviews measured"
        if one.get("cost_fit_samples"):
            how = f"mean cost over the mix offered, fitted on {one['cost_fit_samples']:g} measured one at a time"
        lines += [
            "",
            f"Reviews: {mixed}; one review {one['one_review_s']:.3f} s ({how}), "
            f"capacity {one['capacity_per_s']:.3f} reviews/s (medians).",
            "",
            "| path | offered | served ÷ capacity | served work | chars served / offered | p95 ÷ one review "
            "| p99 refused (s) | refused | gave up at 30 s | late |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        peers = data["peers"]["streams"] if one is data and data.get("peers") else []
        for p in [*one["streams"], *peers]:
            lines.append(
                f"| {p.get('label') or spec(p['path']).label} | {p['multiple']:g}× | {num(p['served_vs_capacity'], 2)} "
                f"| {num(p.get('served_work'), 2)} "
                f"| {lengths(p)} "
                f"| {num(p['p95_reviews'], 1)} | {num(p['p99_refused_s'], 3)} "
                f"| {p['refused_share']:.0%} | {p['gave_up_share']:.0%} | {late(p.get('late'))} |"
            )
        lines += [
            "",
            "| path | burst | served | work (reviews) | chars served / offered | first answer (s) "
            "| slowest served (s) | p99 refused (s) | late |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for b in one["bursts"]:
            lines.append(
                f"| {spec(b['path']).label} | {b['burst']} | {b['served']:g} | {num(b.get('served_work_reviews'), 1)} "
                f"| {lengths(b)} | {num(b['first_answer_s'], 2)} | {num(b['slowest_served_s'], 1)} "
                f"| {num(b['p99_refused_s'], 3)} | {late(b.get('late'))} |"
            )
    return "\n".join(lines)


def drawn_peers(out: Path) -> Path | None:
    """The peer report the figure at `out` already draws, so a redraw of ②③⑤ keeps Infinity and LitServe."""
    try:
        source = json.loads(out.read_text(encoding="utf-8"))["peers"]["source"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    path = PROJECT_ROOT / source
    return path if path.exists() else None


def write(
    streams: Path = STREAMS,
    bursts: Path = BURSTS,
    out: Path = CURVE,
    since: str | None = None,
    peers: Path | None = None,
) -> dict[str, Any]:
    rows = newest(streams, since)
    dates = {row["date"] for row in rows}
    fired = [b for b in newest(bursts, since) if b["date"] in dates] if bursts.exists() else []
    data = curve(rows, fired) | {"since": since}  # bursts only from the same runs as the streams
    peers = peers or drawn_peers(out)
    if peers is not None:
        data["peers"] = peer_points(peers)
    out.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return data


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--streams", type=Path, default=STREAMS)
    parser.add_argument("--bursts", type=Path, default=BURSTS)
    parser.add_argument("--out", type=Path, default=CURVE)
    parser.add_argument("--since", help="every run from this ISO date-time on (default: the newest run alone)")
    parser.add_argument(
        "--peers",
        type=Path,
        help="a `bench.peer` report (docs/bench/peer-TAG.json) whose open streams put Infinity and LitServe beside "
        "②③⑤ (default: the report the figure already draws)",
    )
    args = parser.parse_args(argv)
    print(tables(write(args.streams, args.bursts, args.out, args.since, args.peers)))


if __name__ == "__main__":
    main()
