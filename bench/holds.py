"""Held seats measured as a policy: path ② under bursts of 12, a sustained 2x and the class walk, held or not.

Every refused request comes back once, at its Retry-After, with the Seat-Hold it was given (load.py's
--retry-once). What is measured is the share of returners seated on their first return and the walk-ins'
refusal rate beside it. The lab runs in-process (httpx's ASGI transport) with the model replaced by one
that sleeps each review's cost: the seat policy is what is under test, and a sleeping model keeps the
result independent of how busy the shared CPU is. Each review costs box_s × (its length / the median
sample's length), clipped to [0.44, 2.8] × box_s: the spread of the twin's costs over the sample reviews
on one core (0.34–2.19 s around a 0.78 s median, docs/batching.md) at the box's 1 s per median review.
The class walk (bench/class_walk.py): three pages fire ② 12 with "거절되면 다시 오기" (up to three returns after
Retry-After plus up to 0.5 s, with the Seat-Hold) while a walk-in page fires ② 4 four times without it.
The twin itself, on the box: `python -m bench.overload --only limited-2x-retry,...` (CPU lock).
`python -m bench.holds` writes docs/bench/held-seats.json and .md (the class walk: held-seats-class-walk.*).
"""

import argparse
import asyncio
import json
import statistics
import subprocess
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
from asgi_lifespan import LifespanManager

from app.engine.model import Ranking, TopicScore
from app.main import create_app
from app.settings import PROJECT_ROOT, Settings
from bench.class_walk import ClassWalk, LaneTrace, run_walk
from bench.class_walk import summary as walk_summary
from kit.load import LoadConfig, run_load, summarize

OUT = PROJECT_ROOT / "docs" / "bench" / "held-seats"
WALK_OUT = PROJECT_ROOT / "docs" / "bench" / "held-seats-class-walk"
BOX_S = 1.0
SPREAD = (0.44, 2.8)


class SleepingScorer:
    """A model that takes each review's modelled cost in wall time and no CPU."""

    def __init__(self, median_chars: int) -> None:
        self._median = median_chars

    def cost_s(self, text: str) -> float:
        body = text.split(" #", 1)[0]  # load.py tags each text with a nonce; the review is before it
        low, high = SPREAD
        return BOX_S * min(high, max(low, len(body) / self._median))

    def score(self, texts: Sequence[str]) -> list[Ranking]:
        time.sleep(sum(self.cost_s(t) for t in texts))
        return [[TopicScore(id="replay", label="replay", score=1.0)] for _ in texts]


@dataclass(frozen=True)
class Scenario:
    name: str
    what: str
    grace_s: float  # 0 = no held seats (as before 2026-12-01)
    capacity_x: float = 0.0
    burst: int = 0
    every_s: float = 20.0
    duration_s: float = 60.0
    walk: ClassWalk | None = None  # the class walk instead of kit/load.py's open loop


SCENARIOS = (
    Scenario("2x-holds", "2x capacity for 60 s, open loop, held seats (grace 3 s)", 3.0, capacity_x=2),
    Scenario("2x-noholds", "the same without held seats", 0.0, capacity_x=2),
    Scenario("burst12-holds", "bursts of 12 every 20 s for 100 s, held seats", 3.0, burst=12, duration_s=100),
    Scenario("burst12-noholds", "the same without held seats", 0.0, burst=12, duration_s=100),
    Scenario(
        "class-walk-holds", "3 pages x ② 12 that come back, a walk-in page ② 4 x 4, held seats", 3.0, walk=ClassWalk()
    ),
    Scenario("class-walk-noholds", "the same without held seats", 0.0, walk=ClassWalk()),
)


async def run_class_walk(scenario: Scenario, scorer: SleepingScorer, samples: list[str]) -> dict[str, Any]:
    assert scenario.walk is not None
    # Warmed up as the box is (the median review, then the length fit's four): a class meets a box whose hints
    # already tell a short review from a long one.
    settings = Settings(warmup=True, job_store="memory://", limited_hold_grace_s=scenario.grace_s, knobs_file=None)
    lane = LaneTrace(scorer)
    app = create_app(settings, lane)
    started = datetime.now(UTC).isoformat(timespec="seconds")
    async with LifespanManager(app, startup_timeout=60) as manager:
        transport = httpx.ASGITransport(app=manager.app)
        async with httpx.AsyncClient(base_url="http://lab", transport=transport, timeout=300) as client:
            lane.t0 = t0 = time.monotonic()
            walk = await run_walk(client, scenario.walk, samples, t0)
            holds = (await client.get("/api/stats")).json()["holds"]
    return {
        "scenario": asdict(scenario),
        "started": started,
        "walk": walk_summary(walk, lane, holds),
        "tries": walk.rows(),
    }


async def run(scenario: Scenario, scorer: SleepingScorer, mean_s: float) -> dict[str, Any]:
    settings = Settings(warmup=False, job_store="memory://", limited_hold_grace_s=scenario.grace_s, knobs_file=None)
    app = create_app(settings, scorer)
    rate = scenario.capacity_x / mean_s if scenario.capacity_x else 0.0
    config = LoadConfig(
        url="http://lab",
        path="limited",
        mode="open",
        rate=rate,
        burst=scenario.burst,
        every_s=scenario.every_s,
        duration_s=scenario.duration_s,
        drain_s=90.0,
        retry_once=True,
        seed=7,  # the same reviews in the same order for every scenario
    )
    async with LifespanManager(app) as manager:
        transport = httpx.ASGITransport(app=manager.app)
        result = await run_load(config, transport=transport)
    summary = summarize(result)
    return {"scenario": asdict(scenario), "rate_per_s": round(rate, 3), "started": result.started, "summary": summary}


def report(rows: list[dict[str, Any]], meta: dict[str, Any]) -> str:
    lines = [
        f"Measured {meta['date']} on {meta['host']}; {meta['model']}.",
        "",
        "| scenario | sent | walk-ins refused | returners | seated on first return | hold results |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for row in rows:
        back = row["summary"].get("comeback", {})
        refused = back.get("walk_ins_refused")
        walk_ins = "–" if refused is None else f"{refused * 100:.0f} % of {back['walk_ins']}"
        seated = f"{back.get('got_a_seat', 0) * 100:.0f} %"
        holds = back.get("hold_results") or "–"
        lines.append(
            f"| {row['scenario']['what']} | {row['summary']['sent']} | {walk_ins} | "
            f"{back.get('retries', 0)} | {seated} | {holds} |"
        )
    return "\n".join(lines) + "\n"


def walk_report(rows: list[dict[str, Any]], meta: dict[str, Any]) -> str:
    lines = [
        f"Measured {meta['date']} on {meta['host']}; {meta['model']}.",
        "",
        "| class walk | returners | seated on first return | served in the end | holds issued, expired unclaimed |"
        " walk-ins served | walk-ins refused at an idle lane | lane idle ≤ 1 s after a walk-in's refusal |",
        "|---|---:|---:|---:|---|---:|---:|---:|",
    ]
    for row in rows:
        w = row["walk"]
        share = w["seated_on_first_return_share"] or 0.0
        lines.append(
            f"| {row['scenario']['what']} (seed {row['scenario']['walk']['seed']}) | {w['returners']} | "
            f"{w['seated_on_first_return']} ({share * 100:.0f} %) | "
            f"{w['returners_served_in_the_end']} | {w['holds']['issued']}, {w['holds']['no_shows']} | "
            f"{w['walk_ins_served']}/{w['walk_ins']} | {w['walk_ins_refused_at_an_idle_lane']} | "
            f"{w['lane_idle_s_within_1s_after_a_walk_in_refusal']} s |"
        )
    return "\n".join(lines) + "\n"


def host() -> str:
    """The CPU's model name (the model sleeps, so only the host's timers enter)."""
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout
    except OSError:
        return "an unknown host"
    name = next((line.split(":", 1)[1].strip() for line in out.splitlines() if line.startswith("Model name")), "")
    return name or "an unknown host"


def write(out: Path, rows: list[dict[str, Any]], meta: dict[str, Any], text: str) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1), encoding="utf-8")
    out.with_suffix(".md").write_text(text, encoding="utf-8")
    print(text)


async def main_async(only: list[str], seeds: list[int]) -> None:
    samples = json.loads(Settings().samples_file.read_text(encoding="utf-8"))
    lengths = sorted(len(str(s["text"])) for s in samples)
    scorer = SleepingScorer(lengths[len(lengths) // 2])
    mean_s = statistics.fmean(scorer.cost_s(str(s["text"])) for s in samples)
    loads, walks = [], []
    for scenario in SCENARIOS:
        if only and scenario.name not in only:
            continue
        print(f"== {scenario.name}: {scenario.what}", flush=True)
        if scenario.walk is not None:
            for seed in seeds:  # each seed draws the returns' jitter afresh
                walk = replace(scenario, walk=replace(scenario.walk, seed=seed))
                walks.append(await run_class_walk(walk, scorer, [str(s["text"]) for s in samples]))
                print(json.dumps(walks[-1]["walk"], ensure_ascii=False), flush=True)
        else:
            loads.append(await run(scenario, scorer, mean_s))
            print(json.dumps(loads[-1]["summary"].get("comeback"), ensure_ascii=False), flush=True)
    meta = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "host": f"{host()} (the model sleeps, so the shared CPU's load does not enter)",
        "model": f"a sleeping model, {BOX_S:g} s per median sample review, mean {mean_s:.2f} s over the samples",
    }
    if loads:
        write(OUT, loads, meta, report(loads, meta))
    if walks:
        write(WALK_OUT, walks, meta, walk_report(walks, meta))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", default="", help="comma-separated scenario names")
    parser.add_argument("--seeds", default="7", help="the class walk once per seed (comma-separated)")
    args = parser.parse_args()
    asyncio.run(main_async([n for n in args.only.split(",") if n], [int(n) for n in args.seeds.split(",") if n]))


if __name__ == "__main__":
    main()
