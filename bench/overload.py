"""`just overload-report`: every overload figure of the lab, measured on the twin under a 1.2 GiB cap.

Each scenario starts a fresh server inside its own memory cgroup (kit/memcap.py),
drives it with kit/load.py, and records the cgroup's peak, OOM kills and whether
the server survived. Writes docs/bench/overload.{md,json} and one PNG per scenario.
Heavy: run it under `flock /tmp/lab-cpu.lock` (the recipe does).
"""

import argparse
import asyncio
import json
import os
import platform
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import psutil

from app.settings import MEMORY_CAP_BYTES, PROJECT_ROOT, Settings
from kit.load import Fate, LoadConfig, LoadResult, draw_chart, run_load, write_result
from kit.measure import PeakRss, alone
from kit.memcap import CappedServer, MemoryCgroup

OUT_DIR = PROJECT_ROOT / "docs" / "bench"
MIB = 2**20


@dataclass(frozen=True)
class Scenario:
    name: str
    group: str  # "memory", "overload" or "hints": which table it lands in
    path: str
    what: str  # one line for the report
    concurrency: int = 0  # closed loop clients, or
    capacity_x: float = 0.0  # open loop at this multiple of the lane's measured capacity, or
    rate: float = 0.0  # a fixed open-loop rate, or
    burst: int = 0  # this many at once every `every_s`
    every_s: float = 10.0
    duration_s: float = 30.0
    drain_s: float = 150.0
    text_chars: int = 0
    retry_once: bool = False
    follow_tickets: bool = True
    settings: dict[str, str] = field(default_factory=dict)
    # Size `capacity_x` by the lane's capacity under this very crowd (a probe on a fresh server), not idle.
    sized_in_use: bool = False


SCENARIOS = [
    Scenario("naive-12", "memory", "naive", "12 clients, sample reviews", concurrency=12),
    Scenario("naive-12-long", "memory", "naive", "12 clients, 300-character reviews", concurrency=12, text_chars=300),
    Scenario(
        "naive-12-long-guard",
        "memory",
        "naive",
        "12 clients, 300-character reviews, LAB_NAIVE_MEMORY_GUARD=1",
        concurrency=12,
        text_chars=300,
        settings={"LAB_NAIVE_MEMORY_GUARD": "1"},
    ),
    Scenario("limited-200", "memory", "limited", "200 clients", concurrency=200),
    Scenario(
        "batched-200",
        "memory",
        "batched",
        "200 clients, LAB_BATCH_MAX_WAIT_S=15",
        concurrency=200,
        settings={"LAB_BATCH_MAX_WAIT_S": "15"},
    ),
    Scenario("tickets-200", "memory", "tickets", "200 clients", concurrency=200),
    Scenario("adaptive-200", "memory", "adaptive", "200 clients (beyond the handout)", concurrency=200),
    Scenario(
        "tickets-1000-queued",
        "memory",
        "tickets",
        "1,000 tickets queued at once (LAB_QUEUE_MAX_JOBS=1000), not followed",
        rate=200,
        duration_s=5,
        drain_s=30,
        follow_tickets=False,
        settings={"LAB_QUEUE_MAX_JOBS": "1000"},
    ),
    Scenario("limited-10x", "overload", "limited", "10x capacity, open loop", capacity_x=10, duration_s=60),
    Scenario(
        "batched-10x",
        "overload",
        "batched",
        "10x capacity, open loop, LAB_BATCH_MAX_WAIT_S=15",
        capacity_x=10,
        duration_s=60,
        settings={"LAB_BATCH_MAX_WAIT_S": "15"},
    ),
    Scenario("tickets-10x", "overload", "tickets", "10x capacity, open loop", capacity_x=10, duration_s=60),
    Scenario(
        "adaptive-10x",
        "overload",
        "adaptive",
        "10x capacity, open loop (beyond the handout)",
        capacity_x=10,
        duration_s=60,
    ),
    Scenario(
        "limited-2x-retry",
        "hints",
        "limited",
        "2x capacity, open loop, each refusal retried once after Retry-After",
        capacity_x=2,
        duration_s=40,
        retry_once=True,
        sized_in_use=True,
    ),
    Scenario(
        "limited-2x60-retry",
        "hints",
        "limited",
        "2x capacity for 60 s, open loop, each refusal retried once after Retry-After with its Seat-Hold",
        capacity_x=2,
        duration_s=60,
        retry_once=True,
        sized_in_use=True,
    ),
    Scenario(
        "limited-2x60-retry-noholds",
        "hints",
        "limited",
        "the same without held seats (LAB_LIMITED_HOLD_GRACE_S=0), as before 2026-12-01",
        capacity_x=2,
        duration_s=60,
        retry_once=True,
        sized_in_use=True,
        settings={"LAB_LIMITED_HOLD_GRACE_S": "0"},
    ),
    Scenario(
        "limited-burst12-retry",
        "hints",
        "limited",
        "bursts of 12 every 20 s, each refusal retried once after Retry-After with its Seat-Hold",
        burst=12,
        every_s=20,
        duration_s=100,
        retry_once=True,
    ),
    Scenario(
        "limited-burst-2x-retry",
        "hints",
        "limited",
        "bursts of 10 (2x its 5 places) every 15 s, each refusal retried once after Retry-After",
        burst=10,
        every_s=15,
        duration_s=60,
        retry_once=True,
    ),
]


def mib(n: int | None) -> float | None:
    return None if n is None else round(n / MIB, 1)


async def capacity_s(url: str) -> float:
    async with httpx.AsyncClient(base_url=url) as client:
        return float((await client.get("/api/model")).json()["service_s_per_review"])


async def still_healthy(url: str) -> bool:
    try:
        async with httpx.AsyncClient(base_url=url, timeout=5) as client:
            return (await client.get("/health")).status_code == 200
    except httpx.HTTPError:
        return False


@contextmanager
def fresh_server(scenario: Scenario, model_dir: Path, log_path: Path) -> Iterator[tuple[MemoryCgroup, CappedServer]]:
    """A server alone in a fresh capped cgroup, with a ticket store of its own: no run inherits another's queue."""
    with MemoryCgroup(MEMORY_CAP_BYTES) as group, tempfile.TemporaryDirectory(prefix="lab-overload-") as data:
        settings = {"LAB_JOB_STORE": f"sqlite:///{data}/jobs.db", **scenario.settings}
        with CappedServer(group, model_dir, log_path, **settings) as server:
            yield group, server


def load_config(scenario: Scenario, url: str, rate: float, duration_s: float) -> LoadConfig:
    return LoadConfig(
        url=url,
        path=scenario.path,
        mode="closed" if scenario.concurrency else "open",
        rate=rate,
        burst=scenario.burst,
        every_s=scenario.every_s,
        concurrency=scenario.concurrency,
        duration_s=duration_s,
        drain_s=scenario.drain_s,
        retry_once=scenario.retry_once,
        text_chars=scenario.text_chars,
        follow_tickets=scenario.follow_tickets,
    )


def capacity_in_use(scenario: Scenario, model_dir: Path, out_dir: Path, probe_s: float) -> float:
    """Reviews a second the lane holds while this scenario's crowd and its retries share its core.

    Refusals, retries and their holds are answered on the one core the lane infers on: on 2026-12-03 a
    lane idle at 0.64 s a review held 0.85 s under a "2x" crowd sized from the idle figure, which so
    offered 2.7x. The probe runs the scenario at that idle sizing on a fresh server of its own.
    """
    log_path = out_dir / f"overload-{scenario.name}-probe.log"
    with fresh_server(scenario, model_dir, log_path) as (_, server):
        rate = scenario.capacity_x / asyncio.run(capacity_s(server.url))
        result = asyncio.run(run_load(load_config(scenario, server.url, rate, probe_s)))
    log_path.unlink(missing_ok=True)
    capacity = result.summary()["lane_capacity_per_s"]
    if not capacity:
        raise RuntimeError(f"{scenario.name}: the probe served nothing, so it measured no capacity")
    return float(capacity)


def run_scenario(scenario: Scenario, model_dir: Path, out_dir: Path, quick: bool) -> dict[str, Any]:
    duration = min(scenario.duration_s, 8.0) if quick else scenario.duration_s
    log_path = out_dir / f"overload-{scenario.name}.log"
    in_use = capacity_in_use(scenario, model_dir, out_dir, 5.0 if quick else 20.0) if scenario.sized_in_use else None
    load_before = os.getloadavg()
    with fresh_server(scenario, model_dir, log_path) as (group, server):
        assert server.process is not None
        service_s = asyncio.run(capacity_s(server.url))
        per_s = in_use if in_use is not None else 1 / service_s
        rate = scenario.rate or scenario.capacity_x * per_s
        config = load_config(scenario, server.url, rate, duration)
        cpu = CpuShare(server.process.pid)
        with PeakRss(alone(server.process.pid), every_s=0.05, also={"anon": group.anon_bytes}) as watch:
            result = asyncio.run(run_load(config))
        shares = cpu.read()
        alive = server.process.poll() is None and asyncio.run(still_healthy(server.url))
        exit_code = server.stop()
        summary = write_result(result, out_dir / f"overload-{scenario.name}")
        row = {
            "name": scenario.name,
            "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
            "group": scenario.group,
            "path": scenario.path,
            "what": scenario.what,
            "rate_per_s": round(rate, 2) if rate else None,
            "concurrency": scenario.concurrency or None,
            "duration_s": duration,
            "service_s_per_review_at_start": round(service_s, 3),
            "capacity_in_use_per_s": in_use,
            "summary": summary,
            "cgroup_peak_mib": mib(group.peak_bytes()),
            "rss_peak_mib": mib(watch.peak),
            "anon_peak_mib": mib(watch.peaks["anon"]),
            "cap_mib": mib(MEMORY_CAP_BYTES),
            "limit_hits": group.limit_hits(),
            "oom_kills": group.oom_kills(),
            "server_alive_after": alive,
            "server_exit_code": exit_code,
            "cpu_cores_used": shares,
            "loadavg_before": [round(x, 2) for x in load_before],
            "loadavg_after": [round(x, 2) for x in os.getloadavg()],
        }
    # Keep the server log only when something went wrong: it is the evidence.
    if alive and row["oom_kills"] == 0:
        log_path.unlink(missing_ok=True)
    return row


class CpuShare:
    """Cores used, on average, by the server, this load generator and everything else on the box."""

    def __init__(self, server_pid: int) -> None:
        self._server = psutil.Process(server_pid)
        self._me = psutil.Process()
        self._started = time.monotonic()
        self._busy = self._total_busy()
        self._server_cpu = self._cpu(self._server)
        self._me_cpu = self._cpu(self._me)

    @staticmethod
    def _total_busy() -> float:
        times = psutil.cpu_times()
        return float(sum(times) - times.idle - getattr(times, "iowait", 0.0))

    @staticmethod
    def _cpu(process: psutil.Process) -> float:
        try:
            t = process.cpu_times()
            return float(t.user + t.system)
        except psutil.Error:
            return 0.0

    def read(self) -> dict[str, float]:
        wall = time.monotonic() - self._started
        server = self._cpu(self._server) - self._server_cpu
        me = self._cpu(self._me) - self._me_cpu
        others = max(self._total_busy() - self._busy - server - me, 0.0)
        used = {"server": server, "load_generator": me, "others": others}
        return {name: round(seconds / wall, 2) for name, seconds in used.items()}


def ceiling(summary: dict[str, Any]) -> str:
    """What any seat policy could have done with the answers this run's lane gave, and the load it was offered."""
    most, offered = summary["comeback"].get("seated_at_most"), summary.get("offered_vs_capacity")
    if most is None or offered is None:
        return ""
    return f"; at most {fmt(most * 100)} % could have been, offered {fmt(offered)}x the capacity the lane held"


def fmt(value: Any, unit: str = "") -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.2f}{unit}" if value < 10 else f"{value:.1f}{unit}"
    return f"{value}{unit}"


def skipped_cell(skipped: dict[str, int] | None) -> str:
    return ", ".join(f"{n} {reason}" for reason, n in (skipped or {}).items()) or "–"


def counts_cell(summary: dict[str, Any]) -> str:
    counts = summary["counts"]
    return f"{summary['sent']} = " + " + ".join(f"{n} {k}" for k, n in counts.items())


def render(rows: list[dict[str, Any]], meta: dict[str, Any]) -> str:
    lines = [
        "# Overload, measured",
        "",
        f"Run {meta['date']} on {meta['machine']}. Model: {meta['model']}. Every server ran alone in a fresh "
        f"cgroup capped at {fmt(rows[0]['cap_mib'] if rows else None)} MiB. {meta['sharing']}",
        "",
        "Produced by `just overload-report` (bench/overload.py); raw results and every request's "
        "outcome in `overload.json` and `overload-*.json`, charts in `overload-*.png`.",
        "",
        "## Memory under the cap",
        "",
        "| scenario | load | requests (sent = categories) | ok p50 / p99 (s) | cgroup peak (MiB) | "
        "anon peak (MiB) | RSS peak (MiB) | OOM kills | server after |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in (r for r in rows if r["group"] == "memory"):
        s = row["summary"]
        lines.append(
            f"| {row['name']} | {row['what']} | {counts_cell(s)} | {fmt(s['ok_latency_s']['p50'])} / "
            f"{fmt(s['ok_latency_s']['p99'])} | {fmt(row['cgroup_peak_mib'])} | {fmt(row.get('anon_peak_mib'))} | "
            f"{fmt(row['rss_peak_mib'])} | "
            f"{row['oom_kills']} | {'alive' if row['server_alive_after'] else 'DEAD'} "
            f"(exit {row['server_exit_code']}) |"
        )
    lines += [
        "",
        "## Ten times the lane's capacity for 60 s (paths 2–5; targets: useful ≥ 90 % of capacity, "
        "fast refusals, nothing lost)",
        "",
        "| path | rate (req/s) | requests (sent = categories) | unexplained | useful (req/s) | lane capacity "
        "(req/s) | useful / capacity | lane busy on answers | refusal p50 / p99 (s) | ok p50 / p99 (s) | "
        "lane skipped | peak (MiB) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in (r for r in rows if r["group"] == "overload"):
        s = row["summary"]
        lane = s.get("server_lane") or {}
        lines.append(
            f"| {row['path']} | {fmt(row['rate_per_s'])} | {counts_cell(s)} | {s['unexplained']} | "
            f"{fmt(s['useful_per_s'])} | {fmt(s['lane_capacity_per_s'])} | {fmt(s['useful_vs_capacity'])} | "
            f"{fmt(s.get('useful_lane_share'))} | "
            f"{fmt(s['rejection_latency_s']['p50'])} / {fmt(s['rejection_latency_s']['p99'])} | "
            f"{fmt(s['ok_latency_s']['p50'])} / {fmt(s['ok_latency_s']['p99'])} | "
            f"{skipped_cell(lane.get('skipped'))} | {fmt(row['cgroup_peak_mib'])} |"
        )
    lines += ["", "## Honest hints", ""]
    for row in rows:
        s = row["summary"]
        if "eta" in s:
            eta = s["eta"]
            lines.append(
                f"- **ETA** ({row['name']}): {fmt(eta['within_target'] * 100)} % of {eta['tickets']} tickets "
                f"finished within max(1.5 s, 25 %) of the ETA promised at submission (target 90 %); "
                f"median ETA − actual {fmt(eta['median_error_s'])} s."
            )
        if "comeback" in s:
            back = s["comeback"]
            walk_ins = back.get("walk_ins_refused")
            cost = "" if walk_ins is None else f"; {fmt(walk_ins * 100)} % of {back['walk_ins']} walk-ins refused"
            lines.append(
                f"- **Retry-After** ({row['name']}): {fmt(back['got_a_seat'] * 100)} % of {back['retries']} "
                f"clients that came back after their Retry-After got a seat (target ≥ 50 %){cost}"
                f"{ceiling(s)}."
            )
    lines += [
        "",
        "## The shared CPU during each scenario",
        "",
        f"Average cores busy ({cores_in_all(meta)}) while the load ran, from /proc: the lab server, the load "
        "generator, and every other process on the box (other developers' work).",
        "",
        "| scenario | server | load generator | others | load average after |",
        "|---|---|---|---|---|",
    ]
    for row in rows:
        cpu = row.get("cpu_cores_used") or {}
        lines.append(
            f"| {row['name']} | {fmt(cpu.get('server'))} | {fmt(cpu.get('load_generator'))} | "
            f"{fmt(cpu.get('others'))} | {fmt(row['loadavg_after'][0])} |"
        )
    dates = sorted({row["date"] for row in rows if "date" in row})
    if len(dates) > 1:
        lines += ["", f"Scenarios were run between {dates[0]} and {dates[-1]} (each row's date is in overload.json)."]
    lines.append("")
    return "\n".join(lines)


def resummarized(result_json: Path) -> dict[str, Any]:
    """Recompute a scenario's summary from its saved outcomes (after the summary learned something new)."""
    saved = json.loads(result_json.read_text(encoding="utf-8"))
    result = LoadResult(
        LoadConfig(**saved["config"]),
        saved["started"],
        [Fate(**o) for o in saved["outcomes"]],
        saved["server_before"],
        saved["server_after"],
        saved["wall_s"],
    )
    summary = result.summary()
    saved["summary"] = summary
    result_json.write_text(json.dumps(saved, indent=1, ensure_ascii=False), encoding="utf-8")
    draw_chart(result, result_json.with_suffix(".png"))
    return summary


def merged_with_earlier(path: Path, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rerunning some scenarios (`--only`) replaces their rows and keeps the others' (each row is dated)."""
    fresh = {row["name"]: row for row in rows}
    if path.exists():
        for row in json.loads(path.read_text(encoding="utf-8"))["rows"]:
            fresh.setdefault(row["name"], row)
    order = [s.name for s in SCENARIOS]
    return sorted(fresh.values(), key=lambda row: order.index(row["name"]) if row["name"] in order else len(order))


def machine_line() -> str:
    memory = psutil.virtual_memory().total / 2**30
    return f"{platform.node() or 'the build box'}: {psutil.cpu_count()} cores, {memory:.0f} GiB, no GPU"


def cores_in_all(meta: dict[str, Any]) -> str:
    """The core count the run read (in its machine line), never a number typed here."""
    cores = meta.get("cores")
    return f"{cores} in all" if cores else "of the machine in the line above"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--only", help="comma-separated scenario names")
    parser.add_argument("--quick", action="store_true", help="8 s per scenario: a smoke run, not a report")
    parser.add_argument("--out", type=Path, default=OUT_DIR)
    parser.add_argument("--model-dir", type=Path, default=None, help="default: LAB_MODEL_DIR, else real, else twin")
    parser.add_argument("--sharing", default="", help="a sentence on what else used the CPU during the run")
    parser.add_argument("--render-only", action="store_true", help="rewrite overload.md from overload.json")
    args = parser.parse_args(argv)
    if args.render_only:
        saved = json.loads((args.out / "overload.json").read_text(encoding="utf-8"))
        saved["meta"]["sharing"] = args.sharing or saved["meta"]["sharing"]
        for row in saved["rows"]:
            row["summary"] = resummarized(args.out / f"overload-{row['name']}.json")
        (args.out / "overload.json").write_text(json.dumps(saved, indent=1), encoding="utf-8")
        (args.out / "overload.md").write_text(render(saved["rows"], saved["meta"]), encoding="utf-8")
        return
    chosen = [s for s in SCENARIOS if not args.only or s.name in args.only.split(",")]
    args.out.mkdir(parents=True, exist_ok=True)
    model_dir = args.model_dir or Settings().resolved_model_dir()
    rows = []
    for scenario in chosen:
        started = time.monotonic()
        print(f"== {scenario.name}: {scenario.what}", flush=True)
        row = run_scenario(scenario, model_dir, args.out, args.quick)
        rows.append(row)
        print(json.dumps({k: row[k] for k in ("cgroup_peak_mib", "oom_kills", "server_alive_after")}), flush=True)
        print(json.dumps(row["summary"]["counts"]), f"{time.monotonic() - started:.0f} s", flush=True)
    meta = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": machine_line(),
        "cores": psutil.cpu_count(),
        "model": f"{model_dir.name}, 1 inference thread",
        "sharing": args.sharing,
    }
    rows = merged_with_earlier(args.out / "overload.json", rows)
    (args.out / "overload.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1), encoding="utf-8")
    (args.out / "overload.md").write_text(render(rows, meta), encoding="utf-8")
    print(f"wrote {args.out / 'overload.md'}")


if __name__ == "__main__":
    main()
