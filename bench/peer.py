"""`just bench-peer`: ③ beside LitServe and Infinity, same model file, same client, same core.

Each (server, scenario) runs against a freshly started server pinned with `taskset` to one
core (the client runs on the others): one review at a time (the same reviews in the same order,
compared text by text; the lab on ② and on ③), bursts of 12 and 50, and open loops at 0.8× and
Poisson streams at 2×, 0.5× and 5× the lane's capacity (from the measured cost curve), each with a 30 s
client timeout, after which the bench watches how long each server keeps burning CPU. LitServe runs the lab's
own scoring code batched with `max_batch_size=8, batch_timeout=0.025`; Infinity (the extra
`infinity`, its own venv, `--infinity-python`) serves the same model file on one thread
(peer_infinity.py); ③ runs its defaults (8, 25 ms). Each scenario runs `--repeats` times, the
servers taking turns going first (peer_report.py says why). Writes docs/bench/peer[-TAG].{md,json}.
Client-side tooling: the server never imports this.
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
import time
from collections.abc import Sequence
from dataclasses import asdict, replace
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType

import httpx

from app.engine.callshape_cache import cpu_model
from app.engine.model import load_topics
from app.settings import PROJECT_ROOT, TWIN_MODEL_DIR
from bench.peer_report import (
    INFINITY,
    LAB,
    LAB_ADAPTIVE,
    LAB_LIMITED,
    ONE_AT_A_TIME,
    PEER,
    Row,
    all_pairs,
    check_targets,
    markdown,
    row_of,
    summarize,
)
from kit.cores import bench_core, keep_off
from kit.host import machine, model_line
from kit.load import Fate, LoadConfig, LoadResult, TextSource, category_of, run_load
from kit.measure import PeakRss, tree
from kit.serverproc import free_port, wait_healthy
from kit.work import LaneCost, Lengths, WorkMeter, mix_sample, mixed

CURVE = PROJECT_ROOT / "static" / "batching-curve.json"
ROUTES = {
    LAB: "/api/batched/predict",
    LAB_LIMITED: "/api/limited/predict",
    LAB_ADAPTIVE: "/api/adaptive/predict",
    PEER: "/predict",
    INFINITY: "/rerank",
}
# for `just bench-peer ARGS`
SHORT = {"lab3": LAB, "lab2": LAB_LIMITED, "lab5": LAB_ADAPTIVE, "litserve": PEER, "infinity": INFINITY}
TOPICS = [t.query for t in load_topics(PROJECT_ROOT / "app" / "data" / "topics.json")]
INFINITY_PYTHON = PROJECT_ROOT / ".venv-infinity" / "bin" / "python"
# Under the lab's 2,000-character limit, past the model's 512 positions: the lab truncates to 512
# tokens; Infinity truncates to 514 (max_position_embeddings) and its inference thread dies.
LONG_TOKENS_TEXT = ("배송이 빠르고 포장이 꼼꼼해서 정말 만족스러운 구매였습니다. " * 60)[:1990]
# Long reviews measured one at a time beside the pool's when a stream mixes them in: the fit must reach 512 tokens.
LONG_MEASURED = 3


WINDOW_S = 0.5  # CPU use is judged over this long: a 50 ms pair of samples sees one 10 ms clock tick as 20 %


def last_busy(samples: list[tuple[float, float]], since: float, window_s: float = WINDOW_S) -> float:
    """The latest moment after `since` that ends a `window_s` in which the processes used over 10 % of a core.

    `samples` are (monotonic, CPU seconds so far). CPU time comes in clock ticks (10 ms), so judging each
    pair of 50 ms samples called an idle server "busy" whenever one tick of housekeeping (a timer, a stats
    tick) fell between them: every server looked busy for the bench's whole limit (2026-12-01).
    """
    latest = since
    start = 0
    for end, (t1, c1) in enumerate(samples):
        while start + 1 < end and t1 - samples[start + 1][0] >= window_s:
            start += 1
        t0, c0 = samples[start]
        if t1 > since and t1 - t0 >= window_s and (c1 - c0) / (t1 - t0) > 0.10:
            latest = max(latest, t1)
    return latest


def busy_after_s(rss: PeakRss, left: float, quiet_s: float = 3.0, limit_s: float = 120.0) -> float:
    """Seconds after `left` (the last client leaving) until the server's processes stopped using CPU:
    waits until they have been idle (under 10 % of a core over each half second) for `quiet_s`, or `limit_s`."""
    busy = left
    while (now := time.monotonic()) - busy < quiet_s and now - left < limit_s:
        time.sleep(0.25)
        busy = last_busy([(t, c) for t, c in list(rss.cpu) if t >= left - WINDOW_S], left)
    return busy - left


class PinnedServer:
    """A server process (and whatever it spawns) on one core, in its own process group."""

    def __init__(self, name: str, model_dir: Path, core: int, scratch: Path, infinity_python: Path) -> None:
        self.name = name
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        batch_log = scratch / "batches.log"
        batch_log.touch()
        python = [sys.executable]
        if name == PEER:
            python += ["-m", "bench.peer_litserve", str(self.port)]
        elif name == INFINITY:
            python = [
                str(infinity_python),
                "-m",
                "bench.peer_infinity",
                str(self.port),
                str(model_dir),
                str(scratch),
            ]
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
        wait_healthy(self.url, self._process, limit_s=240)
        if self.name == INFINITY:  # started without its own warm-up (peer_infinity.py says why): the lab warms up too
            httpx.post(self.url + ROUTES[INFINITY], json=body(INFINITY, "워밍업 리뷰"), timeout=120).raise_for_status()
        return self

    def answers(self, timeout_s: float = 30.0) -> str | None:
        """None if a short review is answered in time, else what happened (while /health may still say 200)."""
        try:
            response = httpx.post(self.url + ROUTES[self.name], json=body(self.name, "짧은 리뷰"), timeout=timeout_s)
        except httpx.HTTPError as error:
            health = httpx.get(self.url + "/health", timeout=5).status_code
            return f"no answer to a short review in {timeout_s:g} s ({type(error).__name__}); /health {health}"
        return None if response.status_code == 200 else f"a short review got {response.status_code}"

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


def body(server: str, text: str) -> dict[str, object]:
    if server == INFINITY:
        return {"model": "twin", "query": text, "documents": TOPICS, "return_documents": False}
    return {"text": text}


def scenarios(
    capacity: float, duration_s: float, seed: int = 1, *, long_share: float = 0.0, long_chars: int = 2000
) -> dict[str, LoadConfig]:
    """Burst scenarios send once and wait; open loops send for `duration_s` at a multiple of capacity.

    Every scenario carries a text seed, so both servers get the same reviews in the same order:
    one sample review costs 0.34-2.19 s on the core, and two random draws of 12 differ in total
    work by up to ±40 %, which is the size of the gap they would be read as (docs/batching.md).
    `long_share` mixes long reviews of `long_chars` into every scenario's reviews.
    """
    mix = LoadConfig(url="", path="", mode="open", seed=seed, long_share=long_share, long_chars=long_chars)
    plans = {f"burst {n}": replace(mix, burst=n, every_s=1e9, duration_s=1.0, drain_s=300) for n in (12, 50)}
    plans[f"open 0.8× ({0.8 * capacity:.2f}/s, {duration_s:g} s)"] = replace(
        mix, rate=0.8 * capacity, duration_s=duration_s, drain_s=240
    )
    # The streams ⑤ is judged on (docs/adaptive.md): below capacity nothing should be refused, above it
    # the servers that never refuse keep clients waiting until they give up at 30 s.
    for times in (2, 0.5, 5):
        plans[f"open {times:g}× Poisson ({times * capacity:.2f}/s, {duration_s:g} s, 30 s timeout)"] = replace(
            mix, rate=times * capacity, duration_s=duration_s, drain_s=40, poisson=True, timeout_s=30.0
        )
    return plans


def one_at_a_time(url: str, server: str, texts: Sequence[str]) -> LoadResult:
    """`texts`, each sent when the previous one is answered: the same texts, in order, for every server."""
    outcomes = []
    config = LoadConfig(url=url, path=ROUTES[server], mode="closed", concurrency=1)
    t0 = time.monotonic()
    with httpx.Client(base_url=url, timeout=120) as client:
        for text in texts:
            due = time.monotonic() - t0
            try:
                status = client.post(ROUTES[server], json=body(server, text)).status_code
                outcomes.append(Fate(due, time.monotonic() - t0 - due, category_of(status), status, text=text))
            except httpx.HTTPError as error:
                late = Fate(due, time.monotonic() - t0 - due, "client_timeout", detail=repr(error), text=text)
                outcomes.append(late)
    return LoadResult(config, "", outcomes)


def run_one(server: str, scenario: str, run: int, config: LoadConfig, options: argparse.Namespace) -> Row:
    with tempfile.TemporaryDirectory() as scratch:
        with (
            PinnedServer(server, options.model_dir, options.core, Path(scratch), options.infinity_python) as process,
            PeakRss(tree(process.pid), every_s=0.05) as rss,
        ):
            busy_after: float | None = None
            if scenario.startswith(ONE_AT_A_TIME):
                first = TextSource(0, options.seed)
                result = one_at_a_time(process.url, server, [first.next() for _ in range(options.one_count)])
            else:
                config.url, config.path = process.url, ROUTES[server]
                config.rerank_documents = TOPICS if server == INFINITY else None
                result = asyncio.run(run_load(config))
                if config.timeout_s:  # every client has left by now: how long does the server keep working?
                    busy_after = busy_after_s(rss, time.monotonic())
            died = process.answers()
        sizes = [int(line) for line in (Path(scratch) / "batches.log").read_text(encoding="utf-8").split()]
        row = row_of(server, scenario, run, result, sizes, rss.peak, busy_after, died, options.meter)
        if server == INFINITY:
            row.mean_batch = None  # it batches pairs inside and says nothing about it
        return row


def long_review_probe(options: argparse.Namespace) -> list[str]:
    """Each server gets one review past 512 tokens, then a short one: does it still answer?"""
    lines = []
    for server in options.servers:
        if server == LAB_LIMITED:
            continue
        with tempfile.TemporaryDirectory() as scratch:
            with PinnedServer(server, options.model_dir, options.core, Path(scratch), options.infinity_python) as p:
                try:
                    long = httpx.post(p.url + ROUTES[server], json=body(server, LONG_TOKENS_TEXT), timeout=60)
                    status = str(long.status_code)
                except httpx.HTTPError as error:
                    status = type(error).__name__
                after = p.answers(timeout_s=30) or "answered"
            first = f"a {len(LONG_TOKENS_TEXT)}-character review → {status}"
            lines.append(f"- {server}: {first}; then a short one: {after}")
    return lines


def lab_shape(args: argparse.Namespace) -> str:
    """What /api/model says about the served call shape (LitServe reads the same cache)."""
    with (
        tempfile.TemporaryDirectory() as scratch,
        PinnedServer(LAB, args.model_dir, args.core, Path(scratch), args.infinity_python) as lab,
    ):
        shape = httpx.get(lab.url + "/api/model", timeout=10).json()["call_shape"]
    return f"one review in {shape['one_review']} per call, a batch in {shape['batch']} ({shape['source']})"


def measured_one_at_a_time(model_dir: Path, core: int, texts: Sequence[str]) -> list[tuple[str, float]]:
    """Each text and its seconds through the lab's ② one at a time on the pinned core (HTTP included), measured
    now: what `--measure-capacity` and bench.adaptive fit each review's cost on (kit/work.py)."""
    with (
        tempfile.TemporaryDirectory() as scratch,
        PinnedServer(LAB_LIMITED, model_dir, core, Path(scratch), Path()) as lab,
    ):
        result = one_at_a_time(lab.url, LAB_LIMITED, texts)
    served = [(o.text, o.latency_s) for o in result.outcomes if o.category == "ok" and o.text is not None]
    if not served:
        raise RuntimeError("no review was answered one at a time: no capacity to scale the loads by")
    return served


def lane_cost(measured: Sequence[tuple[str, float]], lengths: Lengths, offered: Sequence[str]) -> LaneCost:
    """The fit on the reviews measured, and the capacity it gives over the mix `offered`."""
    sizes = lengths.of([text for text, _ in measured])
    return LaneCost.of(list(zip(sizes, (s for _, s in measured), strict=True)), lengths.of(offered))


def measured_capacity(
    model_dir: Path, core: int, count: int, seed: int, *, long_share: float = 0.0, long_chars: int = 2000
) -> WorkMeter:
    """The lane's cost per review, fitted on `count` reviews of the pool (and, with a long mix, `LONG_MEASURED`
    long ones) sent one at a time, and its capacity over the mix a stream with that seed offers."""
    longs = LONG_MEASURED if long_share > 0 else 0
    measured = measured_one_at_a_time(model_dir, core, mixed(seed, count, longs, long_chars))
    lengths = Lengths(model_dir)
    return WorkMeter(lengths, lane_cost(measured, lengths, mix_sample(seed, long_share, long_chars)))


def how_capacity(args: argparse.Namespace) -> str:
    """Where the capacity came from, for the report's header."""
    if args.meter is None:
        return " (given)" if args.capacity else " (from the cost curve; served work needs --measure-capacity)"
    fit = args.meter.cost.fit
    return (
        f" (1 / the mean one-at-a-time cost over the mix offered, {args.meter.cost.one_review_s:.3f} s, fitted on "
        f"{fit.samples} reviews measured through ② one at a time: "
        f"{fit.a_s:.3f} + {fit.b_s:.5f}·x + {fit.c_s:.2e}·x² s, x in {fit.unit}, worst error {fit.worst_error:.0%})"
    )


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
    parser.add_argument(
        "--measure-capacity", action="store_true", help="measure it first: ② one at a time, as bench.adaptive does"
    )
    parser.add_argument("--duration", type=float, default=60.0, help="seconds of each open loop")
    parser.add_argument("--only", nargs="*", help="scenario name prefixes to run (default: all)")
    parser.add_argument("--seed", type=int, default=1, help="which reviews the client sends (the same to both)")
    parser.add_argument("--repeats", type=int, default=5, help="runs of each scenario per server (medians are judged)")
    parser.add_argument("--out", type=Path, default=PROJECT_ROOT / "docs" / "bench")
    parser.add_argument(
        "--tag", default="", help="writes peer-TAG.{md,json}: a long bench split into runs under ~10 min"
    )
    parser.add_argument(
        "--servers",
        nargs="*",
        default=[LAB, LAB_LIMITED, LAB_ADAPTIVE, PEER, INFINITY],
        choices=list(ROUTES),
        type=lambda name: SHORT.get(name, name),
        help="lab3, lab2, lab5, litserve, infinity (or their full names)",
    )
    parser.add_argument(
        "--infinity-python", type=Path, default=INFINITY_PYTHON, help="the venv with the extra `infinity`"
    )
    parser.add_argument(
        "--one-count", type=int, default=12, help="reviews one at a time: the scenario, and the capacity's sample"
    )
    parser.add_argument("--long-share", type=float, default=0.0, help="share of long reviews mixed into the loads")
    parser.add_argument("--long-chars", type=int, default=2000, help="characters of each long review")
    parser.add_argument("--long-probe", action="store_true", help="first send each server a review past 512 tokens")
    args = parser.parse_args()
    if args.core is None:
        parser.error("pinning both servers to one core needs Linux (sched_setaffinity, taskset)")

    # A `timeout` or Ctrl-C must still stop the pinned servers (their groups are not ours).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if INFINITY in args.servers and not args.infinity_python.exists():
        parser.error(f"{args.infinity_python} missing: `just setup-infinity` installs the extra `infinity` there")
    keep_off(args.core)  # the client runs beside the servers, never on their core
    args.meter = None  # served work needs each review's cost, measured here
    if args.capacity:
        capacity = args.capacity
    elif args.measure_capacity:
        args.meter = measured_capacity(
            args.model_dir, args.core, args.one_count, args.seed, long_share=args.long_share, long_chars=args.long_chars
        )
        capacity = args.meter.cost.capacity_per_s
    else:
        capacity = capacity_from_curve(CURVE)
    started, load_at_start = datetime.now(UTC), os.getloadavg()
    shape = lab_shape(args)  # also measures and caches the shape if this host has not yet: before any timing
    probe = long_review_probe(args) if args.long_probe else []
    plans = {f"{ONE_AT_A_TIME} ({args.one_count} reviews)": LoadConfig(url="", path="", mode="closed")}
    plans |= scenarios(capacity, args.duration, args.seed, long_share=args.long_share, long_chars=args.long_chars)
    rows: list[Row] = []
    for scenario, config in plans.items():
        if args.only and not any(scenario.startswith(prefix) for prefix in args.only):
            continue
        # ② stands for the lane one at a time; ⑤ (the same lane, one at a time) only under a crowd.
        alone = scenario.startswith(ONE_AT_A_TIME)
        servers = [s for s in args.servers if (s != LAB_LIMITED or alone) and (s != LAB_ADAPTIVE or not alone)]
        for run in range(1, args.repeats + 1):
            order = servers[run % len(servers) :] + servers[: run % len(servers)]  # each takes its turn first
            for server in order:
                row = run_one(server, scenario, run, LoadConfig(**asdict(config)), args)
                print(json.dumps(asdict(row) | {"latencies_s": "…"}, ensure_ascii=False), flush=True)
                rows.append(row)

    load = os.getloadavg()
    header = (
        f"Measured {started:%Y-%m-%d %H:%M}–{datetime.now(UTC):%H:%M} UTC on {machine()} ({cpu_model()}), "
        f"every server pinned to core {args.core} (`taskset`), one onnxruntime thread; the client on the other "
        f"core; all get the same reviews (seed {args.seed}); {args.repeats} runs of each. "
        f"Load average (1/5/15 min) at the start "
        f"{load_at_start[0]:.1f}/{load_at_start[1]:.1f}/{load_at_start[2]:.1f}, "
        f"at the end {load[0]:.1f}/{load[1]:.1f}/{load[2]:.1f}. "
        f"Model: {model_line(args.model_dir)}. Capacity one review at a time: {capacity:.2f}/s{how_capacity(args)}. "
        f"The lab's call shape: {shape}."
    )
    if args.long_share:
        header += (
            f" {args.long_share:.0%} of the reviews are {args.long_chars:,} characters long (sample reviews joined)."
        )
    args.out.mkdir(parents=True, exist_ok=True)
    summaries = summarize(rows)
    pairs = all_pairs(rows)
    checks = check_targets(summaries, pairs)
    report = markdown(rows, summaries, checks, pairs)
    if probe:
        report = "A review past the model's 512 positions, then a short one:\n\n" + "\n".join(probe) + "\n\n" + report
    name = f"peer-{args.tag}" if args.tag else "peer"
    (args.out / f"{name}.md").write_text(f"{header}\n\n{report}\n", encoding="utf-8")
    payload = {
        "header": header,
        "capacity_per_s": capacity,
        "cost_fit": args.meter.cost.fit.row() if args.meter else None,
        "long_share": args.long_share,
        "long_chars": args.long_chars,
        "summaries": [asdict(s) for s in summaries],
        "targets": [asdict(c) for c in checks],
        "paired": [asdict(p) for p in pairs],
        "long_review_probe": probe,
        "rows": [asdict(r) for r in rows],
    }
    (args.out / f"{name}.json").write_text(json.dumps(payload, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"\n{header}\n\n{report}")


if __name__ == "__main__":
    main()
