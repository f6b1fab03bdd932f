"""Numbers the page quotes, read from the committed benchmark data (docs/bench/), with when and where measured.

A sentence copied by hand goes stale when the benchmark is rerun; these follow `just bench`'s output.
"""

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from app.settings import MEMORY_CAP_BYTES, PROJECT_ROOT

BURSTS = PROJECT_ROOT / "docs" / "bench" / "bursts.json"  # written by `just bench` (bench/bursts.py)
# ① at the cliff, the page's record (docs/box.md):
# `just bench-cliff --server lab --cold --sizes 4,6,8,10,12,16 > docs/bench/cliff.jsonl`
CLIFF = PROJECT_ROOT / "docs" / "bench" / "cliff.jsonl"
MEASURED = re.compile(r"Measured from (?P<when>\d{4}-\d\d-\d\d \d\d:\d\d UTC) on (?P<host>[^(]*\([^)]*\))")


@dataclass(frozen=True, slots=True)
class NaiveBursts:
    """① on the box, as `just bench` measured it: a burst of 12 sample reviews and one of 50."""

    when: str  # "2026-11-30 14:02 UTC"
    host: str  # "vm (2 CPUs, 24 GiB, x86_64, no GPU)"
    sent: int
    served: int
    fastest_s: float
    slowest_s: float
    p50_s: float
    peak_of_cap_pct: int
    deaths: int  # the box's deaths during the burst of 12 (the kernel at its memory cap)
    big_sent: int
    big_served: int
    big_deaths: int


def _burst(results: list[dict[str, Any]], path: str, clients: int) -> dict[str, Any] | None:
    return next((r for r in results if r["path"] == path and r["clients"] == clients), None)


@lru_cache
def naive_bursts(path: Path = BURSTS) -> NaiveBursts | None:
    """None when the data is missing or not in the shape expected: the page then quotes nothing."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        stamp = MEASURED.search(data["header"])
        small, big = _burst(data["results"], "naive", 12), _burst(data["results"], "naive", 50)
        if stamp is None or small is None or big is None:
            return None
        served = [o["round_trip_s"] for o in small["outcomes"] if o["status"] == 200]
        return NaiveBursts(
            when=stamp["when"],
            host=stamp["host"].strip(),
            sent=small["clients"],
            served=small["served"],
            fastest_s=round(min(served), 1) if served else 0.0,
            slowest_s=round(max(served), 1) if served else 0.0,
            p50_s=round(small["p50_s"], 1),
            peak_of_cap_pct=round(small["peak_rss_mb"] * 2**20 * 100 / MEMORY_CAP_BYTES),
            deaths=small.get("box_deaths") or 0,
            big_sent=big["clients"],
            big_served=big["served"],
            big_deaths=big.get("box_deaths") or 0,
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None


@dataclass(frozen=True, slots=True)
class CliffStep:
    n: int  # ① requests at once
    lived: int  # tries the box survived
    tries: int


@dataclass(frozen=True, slots=True)
class NaiveCliff:
    """① at the cliff on the lab's box, as `bench.cliff` measured it: where a crowd starts to kill the box."""

    started: str  # "2026-12-05 04:30 UTC"
    host: str  # the CPU model ("AMD EPYC")
    steps: tuple[CliffStep, ...]

    @property
    def edge(self) -> int | None:
        """The smallest crowd the box did not always survive: where the cliff starts on this box."""
        return next((step.n for step in self.steps if step.lived < step.tries), None)


@lru_cache
def naive_cliff(path: Path = CLIFF) -> NaiveCliff | None:
    """The lab's rows of a bench.cliff run, by crowd size; None when missing or not in that shape."""
    try:
        lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        header, rows = lines[0], [r for r in lines[1:] if r.get("server") == "lab"]
        sizes = sorted({int(r["n"]) for r in rows})
        steps = tuple(
            CliffStep(n, sum(not r["died"] for r in rows if r["n"] == n), sum(r["n"] == n for r in rows)) for n in sizes
        )
        started = re.sub(r"(\d\d:\d\d):\d\d", r"\1", str(header["started"]))  # minutes are enough for a student
        return NaiveCliff(started, str(header["host"]), steps) if steps else None
    except (OSError, ValueError, KeyError, TypeError, IndexError, AttributeError):
        return None
