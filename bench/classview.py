"""What the class view costs the box: 40 students × 50 requests a minute, with 3 class views following the lesson.

`flock /tmp/lab-cpu.lock python -m bench.classview [--minutes 3] [--students 40] [--per-minute 50] [--views 3]
[--fill 20000] [--repeats 3] [--parts record,class,bound,memory] [--out docs/bench/classview-DATE.json]`
(`just bench-classview`)

Starts the box as `just serve` does (`python -m app.box`: one core, ~1 s a review, the 1.2 GiB cap) twice, once with
the lesson's record and `--views` class views following it over their sockets, once without (LAB_LESSON_RECORD=false).
In each, `--students` students (each its own `lab_student` key) send Poisson streams of `--per-minute` requests a
minute for `--minutes`, each to a path drawn at random among those that refuse when full (a class at this rate fills
any other: ① would kill the box, ③ would queue without end). Then, on a bare server with the tiny model (whose
inferences move its memory little), the same two arms are filled to `--fill` requests, the record's bound, as fast
as 64 clients get answers. Measured:

- the view's own time on the box's core: the thread CPU time the record's hooks, its feed (the views' texts and
  sends) and its file's thread spent (GET /api/class/requests `cpu_s`), over the run's wall time. A send that
  waits on a full socket would count whatever else the loop ran meanwhile: it can only overstate;
- memory: the box's server RSS before and after the class run; the bare server's before and after the fill; and
  the record's own Python objects at the bound (tracemalloc, in this process);
- what the class got in each arm (answers by status), so that a view taking from the lane would show.

`memory` (the box's own memory, cleanly): `--repeats` fresh boxes per arm, record on (with `--views` views following)
and off, in alternating order. Each box serves a warm-up of FILL_CLIENTS requests, goes quiet (the lane idle, nothing
waiting: the box gives its freed heap back after a crowd, app/memory/give_back.py) and is read for SETTLE_S; then it is
filled to `--fill` requests as the fill above (the record's bound: 20,000 is ten minutes of 40 students at 50 a
minute) and read again once quiet. Each reading is the median of one a second over SETTLE_S of the box's memory
cgroup (anonymous memory, and what counts against the cap: usage less the inactive page cache) and of the server's
RSS. The record's cost is the difference of the arms' median growths; the spread is each arm's range.
"""

import argparse
import asyncio
import contextlib
import json
import random
import secrets
import statistics
import tempfile
import time
import tracemalloc
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import psutil
from websockets.asyncio.client import connect

from app.host import cpu_model
from app.inside.cgroup_memory import MemoryFiles
from app.lesson.feed import LessonFeed
from app.lesson.record import LessonRecord
from app.paths.registry import PATHS
from app.settings import Settings
from kit.fire import send
from kit.host import load_average, machine
from kit.live import TINY_MODEL
from kit.serverproc import ServerProcess, box_groups

# The paths a class can keep sending to at this rate: they answer "full" at once when they are.
REFUSING = [p for p in PATHS if 429 in p.statuses]
CLIENT_TIMEOUT_S = 30.0
FILL_CLIENTS = 64
SETTLE_S = 10.0  # the memory section: a quiet box read once a second for this long (its median)
MIB = 2**20


def server_rss(server: ServerProcess) -> int:
    total = 0
    for pid in server.server_pids():
        with contextlib.suppress(psutil.Error):
            total += psutil.Process(pid).memory_info().rss
    return total


async def lesson_state(client: httpx.AsyncClient, token: str) -> dict[str, Any] | None:
    answer = await client.get("/api/class/requests", params={"path": "-"}, headers={"Authorization": f"Bearer {token}"})
    if answer.status_code == 404:  # the record is off in this arm
        return None
    body: dict[str, Any] = answer.json()
    return {"cpu_s": body["cpu_s"], "kept": body["kept"]["count"]}


async def view(url: str, token: str, seen: Counter[str], stop: asyncio.Event, opened: asyncio.Event) -> None:
    """One class view's socket: reads every text the box sends it until the run ends."""
    address = url.replace("http://", "ws://") + f"/api/class/live?token={token}"
    async with connect(address, max_size=None) as socket:
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                text = await asyncio.wait_for(socket.recv(), 1.0)
                seen["texts"] += 1
                seen["bytes"] += len(text)
                opened.set()


async def open_on_full(url: str, token: str, client: httpx.AsyncClient) -> dict[str, Any]:
    """One more view opened once the record is full: the size of its first text and the record's CPU for it."""
    before = await lesson_state(client, token)
    async with connect(url.replace("http://", "ws://") + f"/api/class/live?token={token}", max_size=None) as socket:
        text = await socket.recv()
    after = await lesson_state(client, token)
    assert before is not None and after is not None
    return {"bytes": len(text), "cpu_s": round(after["cpu_s"] - before["cpu_s"], 3)}


async def student(url: str, per_minute: float, until: float, answers: Counter[str], n: int) -> None:
    """One student's Poisson stream: requests due on its own clock, each sent without waiting for the last."""
    rng = random.Random(n)
    key = secrets.token_urlsafe(16)
    pending: set[asyncio.Task[None]] = set()
    limits = httpx.Limits(max_connections=200)
    async with httpx.AsyncClient(
        base_url=url, cookies={"lab_student": key}, timeout=CLIENT_TIMEOUT_S, limits=limits
    ) as c:

        async def one(i: int) -> None:
            path = rng.choice(REFUSING)
            answer = await send(c, path.route, {"text": f"수업 중 리뷰 {n}-{i}: 맛은 괜찮은데 줄이 길었어요"})
            answers[f"{path.name} {answer.status or answer.error}"] += 1

        i = 0
        next_at = time.monotonic() + rng.expovariate(per_minute / 60)
        while next_at < until:
            await asyncio.sleep(max(0.0, next_at - time.monotonic()))
            task = asyncio.create_task(one(i))
            pending.add(task)
            task.add_done_callback(pending.discard)
            i += 1
            next_at += rng.expovariate(per_minute / 60)
        await asyncio.gather(*pending)


async def fill(url: str, total: int, answers: Counter[str]) -> None:
    """`total` requests from FILL_CLIENTS students, each sending its next as soon as it has an answer."""
    sent = 0

    async def client(n: int) -> None:
        nonlocal sent
        async with httpx.AsyncClient(base_url=url, cookies={"lab_student": secrets.token_urlsafe(16)}, timeout=30) as c:
            while sent < total:
                sent += 1
                path = REFUSING[sent % len(REFUSING)]
                answer = await send(c, path.route, {"text": f"채우는 리뷰 {n}-{sent}"})
                answers[f"{path.name} {answer.status or answer.error}"] += 1

    await asyncio.gather(*(client(n) for n in range(FILL_CLIENTS)))


class Views:
    """`n` class views following the lesson over their sockets, while the block runs."""

    def __init__(self, url: str, token: str, n: int) -> None:
        self.url, self.token, self.n = url, token, n
        self.seen: Counter[str] = Counter()
        self._stop = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []

    async def __aenter__(self) -> "Views":
        opened = [asyncio.Event() for _ in range(self.n)]
        self._tasks = [asyncio.create_task(view(self.url, self.token, self.seen, self._stop, o)) for o in opened]
        for first in opened:  # each view's first text (the whole record) before the clock starts
            await first.wait()
        return self

    async def __aexit__(self, *_: object) -> None:
        self._stop.set()
        await asyncio.gather(*self._tasks)


def share(a: dict[str, Any] | None, b: dict[str, Any] | None, wall: float) -> float | None:
    """The record's CPU between two looks, as a percentage of the wall time: its share of the box's one core."""
    return None if a is None or b is None else round(100 * (b["cpu_s"] - a["cpu_s"]) / wall, 3)


async def class_run(server: ServerProcess, token: str, args: argparse.Namespace, views: int) -> dict[str, Any]:
    """The class at its rate for `--minutes`, with `views` class views open."""
    async with httpx.AsyncClient(base_url=server.url, timeout=120) as client, Views(server.url, token, views) as open_:
        rss0, state0, t0 = server_rss(server), await lesson_state(client, token), time.monotonic()
        answers: Counter[str] = Counter()
        until = t0 + 60 * args.minutes
        await asyncio.gather(*(student(server.url, args.per_minute, until, answers, n) for n in range(args.students)))
        rss1, state1, t1 = server_rss(server), await lesson_state(client, token), time.monotonic()
    return {
        "views": views,
        "wall_s": round(t1 - t0, 1),
        "requests": sum(answers.values()),
        "answers": dict(sorted(answers.items())),
        "view_cpu_s": None if state1 is None or state0 is None else round(state1["cpu_s"] - state0["cpu_s"], 3),
        "view_core_pct": share(state0, state1, t1 - t0),
        "rss_mib": [round(r / 2**20, 1) for r in (rss0, rss1)],
        "rss_growth_mib": round((rss1 - rss0) / 2**20, 1),
        "view_texts": open_.seen["texts"],
        "view_bytes": open_.seen["bytes"],
    }


async def fill_run(server: ServerProcess, token: str, args: argparse.Namespace, views: int) -> dict[str, Any]:
    """The record filled to its bound (`--fill` requests as fast as FILL_CLIENTS clients get answers), `views` open."""
    async with httpx.AsyncClient(base_url=server.url, timeout=120) as client:
        async with Views(server.url, token, views):
            rss0 = server_rss(server)
            filled: Counter[str] = Counter()
            await fill(server.url, args.fill, filled)
            rss1, state = server_rss(server), await lesson_state(client, token)
        opened = await open_on_full(server.url, token, client) if views else None
    return {
        "views": views,
        "requests": sum(filled.values()),
        "kept": None if state is None else state["kept"],
        "rss_mib": [round(r / 2**20, 1) for r in (rss0, rss1)],
        "rss_growth_mib": round((rss1 - rss0) / 2**20, 1),
        "view_opened_on_the_full_record": opened,
    }


def record_at_bound(entries: int, students: int) -> dict[str, Any]:
    """The record itself, in this process, holding `entries` answered requests of `students` students: the Python
    memory it holds (tracemalloc), and the first text a view opened on it gets."""
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    record = LessonRecord(max_requests=entries, max_age_s=7200)
    keys = [secrets.token_urlsafe(16) for _ in range(students)]
    head = {"type": "http.response.start", "status": 429, "headers": [(b"server-timing", b"wait;dur=12.5")]}
    noted = {"lab_error": ("box_full", "seats_full")}
    for i in range(entries):
        scope = {"headers": [(b"cookie", f"lab_student={keys[i % students]}".encode())], "client": ("10.0.0.9", 1)}
        e = record.arrive(scope, REFUSING[i % len(REFUSING)].name)
        record.answer_started(e, head, {"state": noted})
        record.ended(e)
        if i % 1000 == 999:
            record.take(time.time())  # as the feed does every half second: nothing piles up between ticks
    record.take(time.time())
    held = sum(stat.size_diff for stat in tracemalloc.take_snapshot().compare_to(before, "filename"))
    tracemalloc.stop()
    whole = LessonFeed(record, None).whole(time.time())
    return {"entries": len(record.entries), "students": students, "held_mib": round(held / 2**20, 2),
            "whole_text_bytes": len(json.dumps(whole, ensure_ascii=False, separators=(",", ":")))}  # fmt: skip


def serving(model: Path, box: bool, record: bool) -> tuple[ServerProcess, str]:
    folder = Path(tempfile.mkdtemp(prefix="lab-bench-classview-"))
    token = secrets.token_urlsafe(18)
    (folder / "token").write_text(token)
    (folder / "token").chmod(0o600)
    settings = {
        "LAB_JOB_STORE": "memory://",
        "LAB_KNOBS_FILE": str(folder / "knobs.json"),  # never the project's kept knobs
        "LAB_INSTRUCTOR_TOKEN_FILE": str(folder / "token"),
        "LAB_LESSON_RECORD": "true" if record else "false",
        "LAB_LESSON_FILE": str(folder / "lesson.db"),
    }
    return ServerProcess(model, box=box, **settings), token


def box_arm(args: argparse.Namespace, record: bool) -> dict[str, Any]:
    """The box as `just serve` runs it, the class at its rate."""
    server, token = serving(Settings().resolved_model_dir(), True, record)
    with server:
        speed = httpx.get(f"{server.url}/api/model", timeout=30).json()["box"]["speed"]
        result = asyncio.run(class_run(server, token, args, args.views if record else 0))
    return {"record": record, "box_speed": speed, **result}


def bound_arm(args: argparse.Namespace, record: bool) -> dict[str, Any]:
    """A bare server on the tiny model (its inferences' memory barely moves), the record filled to its bound."""
    server, token = serving(TINY_MODEL, False, record)
    with server:
        result = asyncio.run(fill_run(server, token, args, args.views if record else 0))
    return {"record": record, **result}


def quiet(url: str, limit_s: float = 300.0) -> None:
    """Until nothing is in flight or waiting on any path, the lane idle and no ticket queued or running."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        body = httpx.get(f"{url}/api/stats", timeout=30).json()
        busy = any(p["in_flight"] or p["waiting"] for p in body["paths"].values()) or body["lane"]["busy"]
        if not busy and not (body["jobs"]["queued"] or body["jobs"]["running"]):
            return
        time.sleep(0.5)
    raise TimeoutError(f"{url} never went quiet")


def memory_now(server: ServerProcess, files: MemoryFiles | None) -> dict[str, float]:
    """The box's memory in MiB: its cgroup's anonymous memory and charge (usage less inactive page cache), and the
    server's RSS and anonymous RSS (/proc/PID/status RssAnon)."""
    found = {"server_rss": server_rss(server) / MIB}
    anon = 0
    for pid in server.server_pids():
        with contextlib.suppress(OSError, ValueError):
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("RssAnon:"):
                    anon += int(line.split()[1]) * 1024
    found["server_rss_anon"] = anon / MIB
    if files is not None:
        found["cgroup_anon"] = files.anon_bytes() / MIB
        found["cgroup_charged"] = files.charged_bytes() / MIB
    return found


def settled(server: ServerProcess, files: MemoryFiles | None) -> dict[str, float]:
    """Once the box is quiet and has given its freed heap back: each measure's median over SETTLE_S, one a second."""
    quiet(server.url)
    time.sleep(2.0)  # the give-back trims 0.5 s after the crowd's last turn: past it
    readings = []
    for _ in range(int(SETTLE_S)):
        readings.append(memory_now(server, files))
        time.sleep(1.0)
    return {k: round(statistics.median(r[k] for r in readings), 2) for k in readings[0]}


async def warm_and_fill(server: ServerProcess, token: str, args: argparse.Namespace, views: int) -> dict[str, Any]:
    groups = box_groups(server.pid)
    files = MemoryFiles.at(groups.dirs["memory"]) if groups is not None and groups.has("memory") else None
    warm: Counter[str] = Counter()
    await fill(server.url, FILL_CLIENTS, warm)  # one request a client: first-use costs out of the measure
    async with Views(server.url, token, views):
        before = await asyncio.to_thread(settled, server, files)
        filled: Counter[str] = Counter()
        started = time.monotonic()
        await fill(server.url, args.fill, filled)
        wall = time.monotonic() - started
        after = await asyncio.to_thread(settled, server, files)
        async with httpx.AsyncClient(base_url=server.url, timeout=120) as client:
            state = await lesson_state(client, token)
    return {
        "views": views,
        "fill_s": round(wall, 1),
        "requests": sum(filled.values()),
        "answers": dict(sorted(filled.items())),
        "kept": None if state is None else state["kept"],
        "before_mib": before,
        "after_mib": after,
        "growth_mib": {k: round(after[k] - before[k], 2) for k in before},
    }


def memory_arm(args: argparse.Namespace, record: bool) -> dict[str, Any]:
    """One fresh box, warmed, quiet, filled to the bound, quiet again."""
    server, token = serving(Settings().resolved_model_dir(), True, record)
    with server:
        result = asyncio.run(warm_and_fill(server, token, args, args.views if record else 0))
    return {"record": record, **result}


def memory_summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Per measure: each arm's growths, their median and range; the record's cost as the difference of medians, and
    the widest and narrowest differences the ranges allow."""
    summary: dict[str, Any] = {}
    for measure in runs[0]["growth_mib"]:
        on = [r["growth_mib"][measure] for r in runs if r["record"]]
        off = [r["growth_mib"][measure] for r in runs if not r["record"]]
        if not on or not off:
            continue
        summary[measure] = {
            "record_on": {"growths": on, "median": statistics.median(on), "range": [min(on), max(on)]},
            "record_off": {"growths": off, "median": statistics.median(off), "range": [min(off), max(off)]},
            "cost_median_mib": round(statistics.median(on) - statistics.median(off), 2),
            "cost_bounds_mib": [round(min(on) - max(off), 2), round(max(on) - min(off), 2)],
        }
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=3.0)
    parser.add_argument("--students", type=int, default=40)
    parser.add_argument("--per-minute", type=float, default=50.0)
    parser.add_argument("--views", type=int, default=3)
    parser.add_argument("--fill", type=int, default=20_000, help="requests sent after the class run (the bound)")
    parser.add_argument("--repeats", type=int, default=3, help="fresh boxes per arm in the memory section")
    parser.add_argument("--parts", default="record,class,bound,memory", help="which sections run (comma-separated)")
    parser.add_argument("--out", help="JSON report (docs/bench/classview-DATE.json)")
    args = parser.parse_args()
    parts = set(args.parts.split(","))
    meta: dict[str, Any] = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "host": f"{machine()} ({cpu_model()})",
        "load_before": load_average(),
        "scenario": vars(args) | {"paths": [p.name for p in REFUSING]},
        "note": "shared machine: other helpers' builds and tests may have run beside it",
    }
    report: dict[str, Any] = dict(meta)
    if "record" in parts:
        report["record_at_bound"] = record_at_bound(Settings().lesson_max_requests, args.students)
        print(json.dumps(report["record_at_bound"]), flush=True)
    for name, part, run in (("box", "class", box_arm), ("bound", "bound", bound_arm)):
        if part not in parts:
            continue
        report[name] = []
        for record in (True, False):
            report[name].append(run(args, record))
            print(json.dumps({name: report[name][-1]}, ensure_ascii=False), flush=True)
    if "memory" in parts:
        report["box_memory"] = []
        for n in range(args.repeats):
            for record in (True, False) if n % 2 == 0 else (False, True):  # alternating: drift falls on both arms
                report["box_memory"].append(memory_arm(args, record) | {"repeat": n + 1, "load": load_average()})
                print(json.dumps({"box_memory": report["box_memory"][-1]}, ensure_ascii=False), flush=True)
        report["box_memory_summary"] = memory_summary(report["box_memory"])
        print(json.dumps({"box_memory_summary": report["box_memory_summary"]}, ensure_ascii=False), flush=True)
    report["load_after"] = load_average()
    if args.out:
        Path(args.out).write_text(json.dumps(report, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
