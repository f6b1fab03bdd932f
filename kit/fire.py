"""The one request-sending core of the lab's load tools: send a review, read the answer, follow a ticket.

Two entry points sit on it because they ask two questions, not because they send differently:

- a closed burst (`fire_burst`, `fire_one`): N requests at once, each followed to its end, and
  what each client saw (`BurstReply`): `just bench` (bench/bursts.py), the box bench
  (bench/box.py) and the metrics traffic (kit/traffic.py);
- a stream (kit/load.py `Runner`): requests due on a schedule (even, Poisson, waves) or
  from N looping clients, each accounted in exactly one category (`Fate`), which the overload,
  holds and peer benchmarks use.

Both send with `send` and follow tickets with `follow`, so a status, a transport error, a
Server-Timing entry, a batch size or a ticket's end is read the same way everywhere.
static/burst.py stays a standalone standard-library copy for students.
"""

import asyncio
import time
from dataclasses import dataclass
from typing import Any

import httpx

from app.paths.registry import PATHS
from kit.measure import server_timing

ROUTES = {p.name: p.route for p in PATHS}
OPEN = ("queued", "running")  # a ticket in any other status has ended


@dataclass
class Answer:
    """One POST's answer, or why there was none (`error`: client_timeout, connect_refused, transport_error)."""

    elapsed_s: float
    response: httpx.Response | None = None
    error: str | None = None
    detail: str | None = None

    @property
    def status(self) -> int:
        """The HTTP status; 0 without an answer."""
        return 0 if self.response is None else self.response.status_code

    def header(self, name: str) -> str | None:
        return None if self.response is None else self.response.headers.get(name)

    @property
    def timing_ms(self) -> dict[str, float]:
        return server_timing(self.header("Server-Timing"))

    @property
    def batch_size(self) -> int | None:
        size = self.header("X-Batch-Size")
        return int(size) if size else None

    @property
    def retry_after_s(self) -> float | None:
        hint = self.header("Retry-After")
        return None if hint is None else float(hint)


async def send(
    client: httpx.AsyncClient, route: str, body: dict[str, Any], headers: dict[str, str] | None = None
) -> Answer:
    """POST `body` to `route`; never raises for the network (a lost answer is an `Answer` with an error)."""
    started = time.perf_counter()
    try:
        response = await client.post(route, json=body, headers=headers)
    except httpx.TimeoutException as exc:
        return Answer(time.perf_counter() - started, error="client_timeout", detail=repr(exc))
    except httpx.ConnectError as exc:  # nobody listening (yet, or any more)
        return Answer(time.perf_counter() - started, error="connect_refused", detail=repr(exc))
    except httpx.HTTPError as exc:  # the connection broke mid-request
        return Answer(time.perf_counter() - started, error="transport_error", detail=repr(exc))
    return Answer(time.perf_counter() - started, response)


@dataclass
class TicketEnd:
    """How following a ticket ended: `status` is the job's (done, failed, …), `http_<code>` for a poll
    refused, `poll_error` for a poll lost, `unfinished` past the deadline; `response` is the last poll's."""

    status: str
    job: dict[str, Any]
    response: httpx.Response | None
    detail: str | None = None


async def follow(
    client: httpx.AsyncClient,
    submitted: httpx.Response,
    *,
    first_after_s: float,
    every_s: float,
    deadline: float | None = None,
) -> TicketEnd:
    """Poll a 202's `Location` (first after `first_after_s`, then every `every_s`) until the job has ended,
    or the monotonic `deadline` passed."""
    job: dict[str, Any] = submitted.json()
    if job.get("status") not in OPEN:
        return TicketEnd(str(job.get("status")), job, None)
    await asyncio.sleep(first_after_s)
    while True:
        try:
            polled = await client.get(submitted.headers["Location"])
        except httpx.HTTPError as exc:
            return TicketEnd("poll_error", job, None, repr(exc))
        job = polled.json() if polled.status_code == 200 else {"status": f"http_{polled.status_code}"}
        if job.get("status") not in OPEN:
            return TicketEnd(str(job.get("status")), job, polled)
        if deadline is not None and time.monotonic() > deadline:
            return TicketEnd("unfinished", job, polled)
        await asyncio.sleep(every_s)


@dataclass
class BurstReply:
    """What one request of a burst got back, as its client saw it."""

    status: int  # HTTP status of the submission (0 = transport error)
    round_trip_s: float
    batch_size: int | None = None
    final: str | None = None  # tickets: how following it ended (the job's terminal status)
    infer_s: float | None = None  # Server-Timing's inference (for a ticket, read when it is done)
    cache_hit: bool = False  # the submission was answered from the result cache (X-Cache: hit)


async def fire_one(client: httpx.AsyncClient, path: str, text: str) -> BurstReply:
    """One review of a burst; a ticket's round trip runs until the poll that sees it ended (polled every 50 ms)."""
    started = time.perf_counter()
    answer = await send(client, ROUTES[path], {"text": text})
    reply = BurstReply(answer.status, answer.elapsed_s, answer.batch_size, cache_hit=answer.header("X-Cache") == "hit")
    last = answer.response
    if answer.status == 202 and last is not None:
        end = await follow(client, last, first_after_s=0.05, every_s=0.05)
        reply.final, reply.round_trip_s = end.status, time.perf_counter() - started
        last = end.response or last
    infer_ms = server_timing(None if last is None else last.headers.get("Server-Timing")).get("infer")
    reply.infer_s = None if infer_ms is None else infer_ms / 1000
    return reply


async def fire_burst(
    base_url: str, path: str, texts: list[str], transport: httpx.AsyncBaseTransport | None = None
) -> tuple[list[BurstReply], float]:
    """All `texts` at `path` at once: each client's reply, and the burst's wall time."""
    limits = httpx.Limits(max_connections=len(texts) + 8, max_keepalive_connections=len(texts) + 8)
    async with httpx.AsyncClient(base_url=base_url, timeout=300, limits=limits, transport=transport) as client:
        started = time.perf_counter()
        replies = await asyncio.gather(*(fire_one(client, path, t) for t in texts))
        return list(replies), time.perf_counter() - started
