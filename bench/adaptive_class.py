"""`python -m bench.adaptive_class`: ⑤'s promises and places in the crowds a class makes, on the twin, one core.

bench.adaptive measures streams and bursts without student keys (each request its own client). A class is
students, each a `lab_student` key (a page, a `burst.py` run); each scenario here runs against a freshly
started lab pinned to one core (bench/peer.py's `PinnedServer`, the client on the other cores):

- `class`: 12 students fire ⑤ 12 together (each student's twelve at once, the students at once);
- `one-and-eleven`: one student fires ⑤ 12 while eleven classmates fire ⑤ once, all together;
- `alone-50`: one student fires ⑤ 50 at once;
- `busy`: ② 5, ③ 8 and ④ 4 are sent, and once ②'s seats are taken 6 students fire ⑤ 2 each;
- `long`: one student fires a 2,000-character review and 5 short ones at once, then 6 students one each.

Per scenario: ⑤'s answers by status, served per student, the slowest served, and how many admitted requests the
server counted answered after their promise (`late` in /api/stats, which must stay 0). One JSON line each,
appended to docs/bench/adaptive-class.jsonl. Client-side tooling: the server never imports this.
"""

import argparse
import asyncio
import json
import signal
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from app.engine.callshape_cache import cpu_model
from app.settings import PROJECT_ROOT, TWIN_MODEL_DIR
from bench.peer import PinnedServer
from kit.cores import bench_core, keep_off
from kit.host import machine

OUT = PROJECT_ROOT / "docs" / "bench" / "adaptive-class.jsonl"
SAMPLES = json.loads((PROJECT_ROOT / "app" / "data" / "sample_reviews.json").read_text(encoding="utf-8"))
LONG_CHARS = 2000

Sent = tuple[str, int, float]  # (student, status, seconds to the answer)


def key(student: int) -> str:
    return f"bench-student-{student:03d}"


def text(i: int) -> str:
    return f"{SAMPLES[i % len(SAMPLES)]['text']} ({i})"


def long_text(i: int) -> str:
    joined, k = "", i
    while len(joined) < LONG_CHARS:
        joined += SAMPLES[k % len(SAMPLES)]["text"] + " "
        k += 1
    return joined[:LONG_CHARS]


class Class:
    """Students sending to one lab; every answer kept as (student, status, seconds)."""

    def __init__(self, client: httpx.AsyncClient) -> None:
        self.client = client
        self.sent: list[Sent] = []
        self._n = 0

    async def one(self, student: int, path: str, review: str | None = None) -> None:
        self._n += 1
        review = review or text(self._n)
        started = time.monotonic()
        reply = await self.client.post(
            f"/api/{path}/predict" if path != "tickets" else "/api/queue/jobs",
            json={"text": review},
            headers={"Cookie": f"lab_student={key(student)}"},
        )
        if path == "adaptive":
            self.sent.append((key(student), reply.status_code, time.monotonic() - started))

    def many(self, student: int, path: str, n: int) -> list[Awaitable[None]]:
        return [self.one(student, path) for _ in range(n)]

    async def stats(self) -> dict[str, Any]:
        reply = await self.client.get("/api/stats")
        return dict(reply.json())


async def crowd_of_twelve(lab: Class) -> None:
    await asyncio.gather(*(c for s in range(12) for c in lab.many(s, "adaptive", 12)))


async def one_and_eleven(lab: Class) -> None:
    await asyncio.gather(*lab.many(0, "adaptive", 12), *(lab.one(s, "adaptive") for s in range(1, 12)))


async def alone_fifty(lab: Class) -> None:
    await asyncio.gather(*lab.many(0, "adaptive", 50))


async def busy_neighbours(lab: Class) -> None:
    others = asyncio.gather(*lab.many(100, "limited", 5), *lab.many(101, "batched", 8), *lab.many(102, "tickets", 4))
    for _ in range(600):  # ②'s seats taken (a failure guard of 60 s, polled, not slept on)
        limited = (await lab.stats())["paths"]["limited"]
        if limited["in_flight"] + limited["waiting"] >= 3:
            break
        await asyncio.sleep(0.1)
    await asyncio.gather(*(c for s in range(6) for c in lab.many(s, "adaptive", 2)))
    await others


async def long_review(lab: Class) -> None:
    await asyncio.gather(lab.one(0, "adaptive", long_text(0)), *lab.many(0, "adaptive", 5))
    await asyncio.gather(*(lab.one(s, "adaptive") for s in range(1, 7)))


SCENARIOS: dict[str, Callable[[Class], Awaitable[None]]] = {
    "class": crowd_of_twelve,
    "one-and-eleven": one_and_eleven,
    "alone-50": alone_fifty,
    "busy": busy_neighbours,
    "long": long_review,
}


async def run(url: str, scenario: str) -> dict[str, Any]:
    limits = httpx.Limits(max_connections=400, max_keepalive_connections=400)
    async with httpx.AsyncClient(base_url=url, timeout=120, limits=limits) as client:
        lab = Class(client)
        await SCENARIOS[scenario](lab)
        stats = await lab.stats()
    served = Counter(student for student, status, _ in lab.sent if status == 200)
    senders = Counter(student for student, _, _ in lab.sent)
    return {
        "answers": dict(Counter(str(status) for _, status, _ in lab.sent)),
        "served_by_student": {s: served.get(s, 0) for s in sorted(senders)},
        "slowest_served_s": max((s for _, status, s in lab.sent if status == 200), default=None),
        "slowest_refused_s": max((s for _, status, s in lab.sent if status == 429), default=None),
        "late": stats["paths"]["adaptive"]["late"],
        "one_review_s": stats["lane"]["service_s_per_review"],
    }


def line(row: dict[str, Any]) -> str:
    served = sorted(row["served_by_student"].values(), reverse=True)

    def num(value: float | None) -> str:
        return "–" if value is None else f"{value:.2f}"

    return (
        f"| {row['scenario']} | {row['answers']} | {served} | {num(row['slowest_served_s'])} "
        f"| {num(row['slowest_refused_s'])} | {row['late']} | {row['one_review_s']:.2f} |"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model-dir", type=Path, default=TWIN_MODEL_DIR)
    parser.add_argument("--core", type=int, default=bench_core(), help="the one CPU the lab is pinned to")
    parser.add_argument("--scenarios", nargs="+", default=list(SCENARIOS), choices=list(SCENARIOS))
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--out", type=Path, default=OUT, help="JSON lines, appended")
    args = parser.parse_args(argv)
    if args.core is None:
        parser.error("pinning the lab to one core needs Linux (sched_setaffinity, taskset)")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a `timeout` must still stop the pinned server
    keep_off(args.core)
    started = datetime.now(UTC)
    host = f"{machine()} ({cpu_model()}), lab pinned to core {args.core}, one onnxruntime thread"
    print("| scenario | ⑤'s answers | served per student | slowest served (s) | slowest refused (s) | late | one (s) |")
    print("|---|---|---|---|---|---|---|")
    for run_number in range(1, args.repeats + 1):
        for scenario in args.scenarios:
            with (
                tempfile.TemporaryDirectory() as scratch,
                PinnedServer("adaptive", args.model_dir, args.core, Path(scratch), Path(sys.executable)) as lab,
            ):
                measured = asyncio.run(run(lab.url, scenario))
            row = {"date": started.isoformat(timespec="seconds"), "host": host, "scenario": scenario}
            row |= {"run": run_number, **measured}
            with args.out.open("a", encoding="utf-8") as out:
                out.write(json.dumps(row, ensure_ascii=False) + "\n")
            print(line(row), flush=True)


if __name__ == "__main__":
    main()
