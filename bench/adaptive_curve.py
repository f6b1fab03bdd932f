"""`python -m bench.adaptive_curve`: the page's cost curve for ②③⑤, from the committed benchmark rows.

Reads docs/bench/adaptive.jsonl and adaptive-bursts.jsonl (written by `python -m bench.adaptive`), keeps
the newest run (rows sharing its `date`), and takes the median over its repeats of each (path, offered
multiple): served per second ÷ the lane's one-at-a-time capacity, p95 of the served ÷ one review's time,
and the shares refused and given up. Writes static/adaptive-curve.json (drawn by static/js/costcurve.js)
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


def newest(path: Path) -> list[dict[str, Any]]:
    """The rows of the newest run in a JSON-lines file (one `date` per run)."""
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    if not rows:
        return []
    latest = max(row["date"] for row in rows)
    return [row for row in rows if row["date"] == latest]


def median(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return statistics.median(known) if known else None


def rounded(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)


def stream_point(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """One (path, multiple): medians over the repeats; shares of what was sent."""

    def share(row: dict[str, Any], prefix: str) -> float:
        counts = row["counts"]
        return float(sum(v for k, v in counts.items() if k.startswith(prefix)) / max(1, sum(counts.values())))

    return {
        "path": rows[0]["path"],
        "multiple": rows[0]["multiple"],
        "runs": len(rows),
        "served_vs_capacity": rounded(median([r["served_vs_capacity"] for r in rows]), 3),
        "p95_reviews": rounded(median([r["p95_served_s"] and r["p95_served_s"] / r["one_review_s"] for r in rows]), 2),
        "p99_refused_s": rounded(median([r["p99_refused_s"] for r in rows]), 3),
        "refused_share": round(statistics.median(share(r, "rejected") for r in rows), 3),
        "gave_up_share": round(statistics.median(share(r, "client_timeout") for r in rows), 3),
    }


def burst_point(rows: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "path": rows[0]["path"],
        "burst": rows[0]["burst"],
        "runs": len(rows),
        "served": statistics.median(r["served"] for r in rows),
        "first_answer_s": rounded(median([r["first_answer_s"] for r in rows]), 2),
        "slowest_served_s": rounded(median([r["slowest_served_s"] for r in rows]), 1),
        "p99_refused_s": rounded(median([r["p99_refused_s"] for r in rows]), 3),
    }


def grouped(rows: list[dict[str, Any]], key: str) -> list[list[dict[str, Any]]]:
    groups: dict[tuple[str, float], list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault((row["path"], row[key]), []).append(row)
    return [groups[k] for k in sorted(groups, key=lambda k: (spec(k[0]).number, k[1]))]


def curve(streams: list[dict[str, Any]], bursts: list[dict[str, Any]]) -> dict[str, Any]:
    """What the page draws: the newest run's medians, with when, where and how they were measured."""
    if not streams:
        raise ValueError("no stream rows: run `python -m bench.adaptive` first")
    started = datetime.fromisoformat(streams[0]["date"])
    core = re.search(r"pinned to core (\d+)", streams[0]["host"])
    return {
        "date": f"{started:%Y-%m-%d}",
        "time_utc": f"{started:%H:%M}",
        "host": streams[0]["host"],
        "host_ko": host_ko(streams[0]["host"]),
        "core": int(core[1]) if core else None,
        "runs": len({r["run"] for r in streams}),
        "duration_s": streams[0]["duration_s"],
        "client_timeout_s": streams[0]["client_timeout_s"],
        "one_review_s": round(statistics.median(r["one_review_s"] for r in streams), 3),
        "capacity_per_s": round(statistics.median(r["capacity_per_s"] for r in streams), 3),
        "streams": [stream_point(g) for g in grouped(streams, "multiple")],
        "bursts": [burst_point(g) for g in grouped(bursts, "burst")],
    }


def tables(data: dict[str, Any]) -> str:
    def num(value: float | None, digits: int) -> str:
        return "–" if value is None else f"{value:.{digits}f}"

    lines = [
        f"Medians of {data['runs']} runs from {data['date']} {data['time_utc']} UTC on {data['host']}; "
        f"one review {data['one_review_s']:.3f} s, capacity {data['capacity_per_s']:.3f} reviews/s (medians).",
        "",
        "| path | offered | served ÷ capacity | p95 ÷ one review | p99 refused (s) | refused | gave up at 30 s |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for p in data["streams"]:
        lines.append(
            f"| {spec(p['path']).label} | {p['multiple']:g}× | {num(p['served_vs_capacity'], 2)} "
            f"| {num(p['p95_reviews'], 1)} | {num(p['p99_refused_s'], 3)} "
            f"| {p['refused_share']:.0%} | {p['gave_up_share']:.0%} |"
        )
    lines += ["", "| path | burst | served | first answer (s) | slowest served (s) | p99 refused (s) |"]
    lines.append("|---|---:|---:|---:|---:|---:|")
    for b in data["bursts"]:
        lines.append(
            f"| {spec(b['path']).label} | {b['burst']} | {b['served']:g} | {num(b['first_answer_s'], 2)} "
            f"| {num(b['slowest_served_s'], 1)} | {num(b['p99_refused_s'], 3)} |"
        )
    return "\n".join(lines)


def write(streams: Path = STREAMS, bursts: Path = BURSTS, out: Path = CURVE) -> dict[str, Any]:
    rows = newest(streams)
    fired = [b for b in newest(bursts) if rows and b["date"] == rows[0]["date"]] if bursts.exists() else []
    data = curve(rows, fired)  # bursts only from the same run as the streams
    out.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return data


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--streams", type=Path, default=STREAMS)
    parser.add_argument("--bursts", type=Path, default=BURSTS)
    parser.add_argument("--out", type=Path, default=CURVE)
    args = parser.parse_args(argv)
    print(tables(write(args.streams, args.bursts, args.out)))


if __name__ == "__main__":
    main()
