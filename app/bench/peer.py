"""`just bench-peer`: ③ and LitServe side by side, same model, same scoring code, same client, same core.

Each (server, scenario) runs against a freshly started server pinned with `taskset` to one
core (the client runs on the others): bursts of 12 and 50, and open loops at 0.8× and 2×
the lane's capacity (one review at a time, from the measured cost curve). LitServe batches
with `max_batch_size=8, batch_timeout=0.025`, ③ with its defaults (8, 25 ms). Each scenario
runs `--repeats` times, the servers taking turns going first (peer_report.py says why).
Writes docs/bench/peer.{md,json}. Client-side tooling: the server never imports this.
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
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType

from app.bench.bursts import machine, model_line
from app.bench.cores import bench_core, keep_off
from app.bench.load import LoadConfig, run_load
from app.bench.measure import PeakRss, tree
from app.bench.peer_report import LAB, PEER, Row, check_targets, markdown, paired, row_of, summarize
from app.bench.serverproc import free_port, wait_healthy
from app.settings import PROJECT_ROOT, TWIN_MODEL_DIR

CURVE = PROJECT_ROOT / "static" / "batching-curve.json"
SERVERS = {LAB: "/api/batched/predict", PEER: "/predict"}


class PinnedServer:
    """A server process (and whatever it spawns) on one core, in its own process group."""

    def __init__(self, name: str, model_dir: Path, core: int, batch_log: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        python = [sys.executable]
        if name == PEER:
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


def run_one(server: str, scenario: str, run: int, config: LoadConfig, model_dir: Path, core: int) -> Row:
    with tempfile.TemporaryDirectory() as scratch:
        batch_log = Path(scratch) / "batches.log"
        batch_log.touch()
        with (
            PinnedServer(server, model_dir, core, batch_log) as process,
            PeakRss(tree(process.pid), every_s=0.05) as rss,
        ):
            config.url, config.path = process.url, SERVERS[server]
            result = asyncio.run(run_load(config))
        sizes = [int(line) for line in batch_log.read_text(encoding="utf-8").split()]  # only LitServe writes it
        return row_of(server, scenario, run, result, sizes, rss.peak)


def capacity_from_curve(path: Path) -> float:
    """Reviews per second one at a time on the pinned core: 1 / (a + b) from the committed fit."""
    fit = json.loads(path.read_text(encoding="utf-8"))["fit"]
    return 1.0 / (float(fit["a_s"]) + float(fit["b_s"]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model-dir", type=Path, default=TWIN_MODEL_DIR)
    parser.add_argument(
        "--core", type=int, default=bench_core(), help="the one CPU both servers are pinned to (default: the last)"
    )
    parser.add_argument("--capacity", type=float, help="reviews/s one at a time (default: from the cost curve)")
    parser.add_argument("--duration", type=float, default=60.0, help="seconds of each open loop")
    parser.add_argument("--only", nargs="*", help="scenario name prefixes to run (default: all)")
    parser.add_argument("--seed", type=int, default=1, help="which reviews the client sends (the same to both)")
    parser.add_argument("--repeats", type=int, default=5, help="runs of each scenario per server (medians are judged)")
    parser.add_argument("--out", type=Path, default=PROJECT_ROOT / "docs" / "bench")
    args = parser.parse_args()
    if args.core is None:
        parser.error("pinning both servers to one core needs Linux (sched_setaffinity, taskset)")

    capacity = args.capacity or capacity_from_curve(CURVE)
    keep_off(args.core)  # the client runs beside the servers, never on their core
    started, load_at_start = datetime.now(UTC), os.getloadavg()
    rows: list[Row] = []
    for scenario, config in scenarios(capacity, args.duration, args.seed).items():
        if args.only and not any(scenario.startswith(prefix) for prefix in args.only):
            continue
        for run in range(1, args.repeats + 1):
            order = list(SERVERS) if run % 2 else list(reversed(SERVERS))  # back to back, taking turns first
            for server in order:
                row = run_one(server, scenario, run, LoadConfig(**asdict(config)), args.model_dir, args.core)
                print(json.dumps(asdict(row) | {"latencies_s": "…"}, ensure_ascii=False), flush=True)
                rows.append(row)

    load = os.getloadavg()
    header = (
        f"Measured {started:%Y-%m-%d %H:%M}–{datetime.now(UTC):%H:%M} UTC on {machine()}, both servers pinned to "
        f"core {args.core} (`taskset`), one onnxruntime thread; the client on the other core; both get the same "
        f"reviews (seed {args.seed}); {args.repeats} runs of each. Load average (1/5/15 min) at the start "
        f"{load_at_start[0]:.1f}/{load_at_start[1]:.1f}/{load_at_start[2]:.1f}, "
        f"at the end {load[0]:.1f}/{load[1]:.1f}/{load[2]:.1f}. "
        f"Model: {model_line(args.model_dir)}. Capacity one review at a time: {capacity:.2f}/s."
    )
    args.out.mkdir(parents=True, exist_ok=True)
    summaries = summarize(rows)
    checks = check_targets(summaries)
    pairs = paired(rows)
    report = markdown(rows, summaries, checks, pairs)
    (args.out / "peer.md").write_text(f"{header}\n\n{report}\n", encoding="utf-8")
    payload = {
        "header": header,
        "capacity_per_s": capacity,
        "summaries": [asdict(s) for s in summaries],
        "targets": [asdict(c) for c in checks],
        "paired": [asdict(p) for p in pairs],
        "rows": [asdict(r) for r in rows],
    }
    (args.out / "peer.json").write_text(json.dumps(payload, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"\n{header}\n\n{report}")


if __name__ == "__main__":
    main()
