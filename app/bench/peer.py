"""`just bench-peer`: ③ and LitServe side by side, same model, same scoring code, same client, same core.

Each (server, scenario) runs against a freshly started server pinned with `taskset` to one
core (the client runs on the others): bursts of 12 and 50, and open loops at 0.8× and 2×
the lane's capacity (one review at a time, from the measured cost curve). LitServe batches
with `max_batch_size=8, batch_timeout=0.025`, ③ with its defaults (8, 25 ms). Writes
docs/bench/peer.{md,json}. Client-side tooling: the server never imports this.
"""

import argparse
import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
from collections import Counter
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType

import psutil

from app.bench.bursts import machine, model_line
from app.bench.load import LoadConfig, LoadResult, percentile, run_load
from app.bench.serverproc import free_port, wait_healthy
from app.settings import PROJECT_ROOT, TWIN_MODEL_DIR

CURVE = PROJECT_ROOT / "static" / "batching-curve.json"
SERVERS = {"lab ③ batched": "/api/batched/predict", "LitServe 0.2.19": "/predict"}


@dataclass
class Row:
    server: str
    scenario: str
    sent: int
    served: int
    not_served: int  # timeouts, transport errors, non-2xx: anything but an answer
    not_served_by: dict[str, int]  # the client's category for each of those
    mean_batch: float | None  # per request: the size of the batch each served request rode
    served_per_s: float
    p50_s: float | None
    p95_s: float | None
    peak_rss_mb: float


class TreeRss:
    """Samples the RSS of a process and all its descendants; `.peak` is the highest sum seen."""

    def __init__(self, pid: int, every_s: float = 0.05) -> None:
        self._root = psutil.Process(pid)
        self._every_s = every_s
        self._stop = threading.Event()
        self.peak = 0
        self._thread = threading.Thread(target=self._sample, name="tree-rss", daemon=True)

    def __enter__(self) -> "TreeRss":
        self._thread.start()
        return self

    def __exit__(self, *_: type[BaseException] | BaseException | TracebackType | None) -> None:
        self._stop.set()
        self._thread.join()

    def _sample(self) -> None:
        while not self._stop.is_set():
            total = 0
            try:
                for process in [self._root, *self._root.children(recursive=True)]:
                    total += process.memory_info().rss
            except psutil.Error:
                pass  # a child came or went mid-walk: the next sample counts it
            self.peak = max(self.peak, total)
            self._stop.wait(self._every_s)


class PinnedServer:
    """A server process (and whatever it spawns) on one core, in its own process group."""

    def __init__(self, name: str, model_dir: Path, core: int, batch_log: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        python = [sys.executable]
        if name.startswith("LitServe"):
            python += ["-m", "app.bench.peer_litserve", str(self.port)]
        else:
            python += ["-m", "uvicorn", "app.main:app", "--host", "127.0.0.1", "--port", str(self.port)]
            python += ["--no-access-log", "--log-level", "warning"]
        self._command = ["taskset", "-c", str(core), *python]
        threads = {"OMP_NUM_THREADS": "1", "LAB_INTRA_OP_THREADS": "1"}
        self._env = {**os.environ, **threads, "LAB_MODEL_DIR": str(model_dir), "LAB_PEER_BATCH_LOG": str(batch_log)}
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int:
        assert self._process is not None
        return self._process.pid

    def __enter__(self) -> "PinnedServer":
        self._process = subprocess.Popen(self._command, cwd=PROJECT_ROOT, env=self._env, start_new_session=True)
        wait_healthy(self.url, self._process, limit_s=180)
        return self

    def __exit__(self, *_: type[BaseException] | BaseException | TracebackType | None) -> None:
        if self._process is None:
            return
        group = self._process.pid  # start_new_session: the group holds this server and its workers only
        with contextlib.suppress(ProcessLookupError):
            os.killpg(group, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._process.wait(timeout=30)
        with contextlib.suppress(ProcessLookupError):  # workers the parent left behind
            os.killpg(group, signal.SIGKILL)
        self._process.wait()


def scenarios(capacity: float, duration_s: float, seed: int = 1) -> dict[str, LoadConfig]:
    """Burst scenarios send once and wait; open loops send for `duration_s` at a multiple of capacity.

    Every scenario carries a text seed, so both servers get the same reviews in the same order:
    one sample review costs 0.34-2.19 s on the core, and two random draws of 12 differ in total
    work by up to ±40 %, which is the size of the gap they would be read as (docs/batching.md).
    """
    plans = {
        f"burst {n}": LoadConfig(
            url="", path="", mode="open", burst=n, every_s=1e9, duration_s=1.0, drain_s=300, seed=seed
        )
        for n in (12, 50)
    }
    for factor in (0.8, 2.0):
        plans[f"open {factor:g}× ({factor * capacity:.2f}/s, {duration_s:g} s)"] = LoadConfig(
            url="", path="", mode="open", rate=factor * capacity, duration_s=duration_s, drain_s=240, seed=seed
        )
    return plans


def row_of(server: str, scenario: str, result: LoadResult, batch_log: Path, peak_rss: int) -> Row:
    ok = [o for o in result.outcomes if o.category == "ok"]
    latencies = [o.latency_s for o in ok]
    if server.startswith("LitServe"):
        sizes = [int(line) for line in batch_log.read_text(encoding="utf-8").split()]
        mean_batch = sum(n * n for n in sizes) / sum(sizes) if sizes else None  # per request, like X-Batch-Size
    else:
        mean_batch = sum(o.batch_size or 1 for o in ok) / len(ok) if ok else None
    if result.config.burst:  # served per second of the whole burst, until its last answer
        span = max((o.due_at + o.latency_s for o in ok), default=0.0)
        served_per_s = len(ok) / span if span else 0.0
    else:  # answers that arrived inside the sending window, per second of it
        in_window = [o for o in ok if o.due_at + o.latency_s <= result.config.duration_s]
        served_per_s = len(in_window) / result.config.duration_s
    return Row(
        server=server,
        scenario=scenario,
        sent=len(result.outcomes),
        served=len(ok),
        not_served=len(result.outcomes) - len(ok),
        not_served_by=dict(Counter(o.category for o in result.outcomes if o.category != "ok")),
        mean_batch=None if mean_batch is None else round(mean_batch, 2),
        served_per_s=round(served_per_s, 3),
        p50_s=percentile(latencies, 50),
        p95_s=percentile(latencies, 95),
        peak_rss_mb=round(peak_rss / 2**20, 1),
    )


def run_one(server: str, scenario: str, config: LoadConfig, model_dir: Path, core: int) -> Row:
    with tempfile.TemporaryDirectory() as scratch:
        batch_log = Path(scratch) / "batches.log"
        batch_log.touch()
        with PinnedServer(server, model_dir, core, batch_log) as process, TreeRss(process.pid) as rss:
            config.url, config.path = process.url, SERVERS[server]
            result = asyncio.run(run_load(config))
        return row_of(server, scenario, result, batch_log, rss.peak)


def fmt(value: float | None, digits: int = 2) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def markdown_table(rows: list[Row]) -> str:
    lines = [
        "| scenario | server | sent | served | not served | mean batch | served/s | p50 s | p95 s | peak RSS MB |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r.scenario} | {r.server} | {r.sent} | {r.served} | {r.not_served} | {fmt(r.mean_batch)} "
            f"| {r.served_per_s:.2f} | {fmt(r.p50_s)} | {fmt(r.p95_s)} | {r.peak_rss_mb:.0f} |"
        )
    return "\n".join(lines)


def capacity_from_curve(path: Path) -> float:
    """Reviews per second one at a time on the pinned core: 1 / (a + b) from the committed fit."""
    fit = json.loads(path.read_text(encoding="utf-8"))["fit"]
    return 1.0 / (float(fit["a_s"]) + float(fit["b_s"]))


def keep_client_off(core: int) -> None:
    """Pin this process (the client) to every CPU but the servers' one, so it never takes their core."""
    others = set(os.sched_getaffinity(0)) - {core}
    if others:
        os.sched_setaffinity(0, others)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model-dir", type=Path, default=TWIN_MODEL_DIR)
    parser.add_argument("--core", type=int, default=1, help="the one CPU both servers are pinned to")
    parser.add_argument("--capacity", type=float, help="reviews/s one at a time (default: from the cost curve)")
    parser.add_argument("--duration", type=float, default=60.0, help="seconds of each open loop")
    parser.add_argument("--only", nargs="*", help="scenario name prefixes to run (default: all)")
    parser.add_argument("--seed", type=int, default=1, help="which reviews the client sends (the same to both)")
    parser.add_argument("--out", type=Path, default=PROJECT_ROOT / "docs" / "bench")
    args = parser.parse_args()

    capacity = args.capacity or capacity_from_curve(CURVE)
    keep_client_off(args.core)
    started, load_at_start = datetime.now(UTC), os.getloadavg()
    rows: list[Row] = []
    for scenario, config in scenarios(capacity, args.duration, args.seed).items():
        if args.only and not any(scenario.startswith(prefix) for prefix in args.only):
            continue
        for server in SERVERS:  # back to back, same core, same scenario
            row = run_one(server, scenario, LoadConfig(**asdict(config)), args.model_dir, args.core)
            print(json.dumps(asdict(row), ensure_ascii=False), flush=True)
            rows.append(row)

    load = os.getloadavg()
    header = (
        f"Measured {started:%Y-%m-%d %H:%M}–{datetime.now(UTC):%H:%M} UTC on {machine()}, both servers pinned to "
        f"core {args.core} (`taskset`), one onnxruntime thread; the client on the other core; both get the same "
        f"reviews (seed {args.seed}). Load average (1/5/15 min) at the start "
        f"{load_at_start[0]:.1f}/{load_at_start[1]:.1f}/{load_at_start[2]:.1f}, "
        f"at the end {load[0]:.1f}/{load[1]:.1f}/{load[2]:.1f}. "
        f"Model: {model_line(args.model_dir)}. Capacity one review at a time: {capacity:.2f}/s."
    )
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "peer.md").write_text(f"{header}\n\n{markdown_table(rows)}\n", encoding="utf-8")
    payload = {"header": header, "capacity_per_s": capacity, "rows": [asdict(r) for r in rows]}
    (args.out / "peer.json").write_text(json.dumps(payload, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"\n{header}\n\n{markdown_table(rows)}")


if __name__ == "__main__":
    main()
