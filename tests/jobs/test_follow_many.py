"""`GET /api/queue/events`: many tickets followed over one server-sent-events stream.

The live tests call the ASGI app directly and record each chunk as it is sent, so they see
the stream while it streams (httpx's ASGI transport only hands back a finished body).
"""

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from itertools import pairwise
from pathlib import Path
from typing import Any

import httpx
import pytest
from asgi_lifespan import LifespanManager
from starlette.types import ASGIApp, Message

from app.contract.schema import MAX_FOLLOWED_JOBS
from app.main import create_app
from app.settings import Settings
from tests.conftest import LabClientFactory
from tests.fakes import GatedScorer
from tests.jobs.test_lifecycle import FAST, job, parse_events, settles, submit

Event = dict[str, Any]
ORDER = ["queued", "running", "done"]


def events_of(events: list[tuple[str, Event]], job_id: str) -> list[Event]:
    return [data for kind, data in events if kind == "status" and data["job_id"] == job_id]


class EventTap:
    """One GET against the app in-process, keeping each server-sent event the moment it is sent."""

    def __init__(self, app: ASGIApp, path: str, query: str) -> None:
        self.status: int | None = None
        self.events: list[tuple[str, Event]] = []
        self.ended = False
        self._buffer = ""
        self._grew = asyncio.Condition()
        self._leave = asyncio.Event()
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": "GET",
            "scheme": "http",
            "path": path,
            "raw_path": path.encode(),
            "query_string": query.encode(),
            "headers": [(b"host", b"lab"), (b"accept", b"text/event-stream")],
            "client": ("127.0.0.1", 1),
            "server": ("lab", 80),
            "root_path": "",
        }
        self.task = asyncio.ensure_future(app(scope, self._receive, self._send))

    async def _receive(self) -> Message:
        if not hasattr(self, "_asked"):
            self._asked = True
            return {"type": "http.request", "body": b"", "more_body": False}
        await self._leave.wait()
        return {"type": "http.disconnect"}

    async def _send(self, message: Message) -> None:
        async with self._grew:
            if message["type"] == "http.response.start":
                self.status = message["status"]
            elif message["type"] == "http.response.body":
                self._buffer += message.get("body", b"").decode()
                *blocks, self._buffer = self._buffer.split("\n\n")
                for block in blocks:
                    fields = dict(line.split(": ", 1) for line in block.splitlines() if not line.startswith(":"))
                    if "event" in fields:
                        self.events.append((fields["event"], json.loads(fields["data"])))
                self.ended = not message.get("more_body", False)
            self._grew.notify_all()

    async def until(self, check: Callable[["EventTap"], bool]) -> None:
        async with asyncio.timeout(10), self._grew:  # a failure guard, not a delay
            await self._grew.wait_for(lambda: check(self))

    async def disconnect(self) -> None:
        self._leave.set()
        async with asyncio.timeout(10):
            await self.task


@asynccontextmanager
async def lab_app(tmp_path: Path, scorer: GatedScorer) -> AsyncIterator[tuple[ASGIApp, httpx.AsyncClient]]:
    """The whole lab in-process, as the app itself (for taps) and as a client (for plain requests)."""
    overrides: dict[str, Any] = {"warmup": False, "job_store": f"sqlite:///{tmp_path / 'jobs.db'}", **FAST}
    settings = Settings(**overrides)
    async with LifespanManager(create_app(settings, scorer)) as manager:
        transport = httpx.ASGITransport(app=manager.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://lab", timeout=30) as client:
            yield manager.app, client


def query(*job_ids: str) -> str:
    return "&".join(f"job_id={job_id}" for job_id in job_ids)


async def test_one_stream_follows_every_job_in_order_and_ends_when_all_are_done(
    lab_client: LabClientFactory, store_url: str
) -> None:
    scorer = GatedScorer()
    async with lab_client(scorer, job_store=store_url, **FAST) as client:
        first = await submit(client, "첫 리뷰")
        await asyncio.to_thread(scorer.wait_entered)
        rest = [await submit(client, f"다음 리뷰 {i}") for i in range(3)]
        ids = [first["job_id"]] + [ticket["job_id"] for ticket in rest]
        # httpx's ASGI transport hands back the body when the stream ends: after every job is terminal.
        streaming = asyncio.create_task(client.get(f"/api/queue/events?{query(*ids, ids[1], 'nope')}"))
        scorer.open()
        response = await streaming
        finals = [await job(client, job_id) for job_id in ids]
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/event-stream")
    blocks = [block for block in response.text.split("\n\n") if "event: missing" in block]
    assert len(blocks) == 1 and json.loads(blocks[0].split("data: ", 1)[1])["job_id"] == "nope"
    events = parse_events(response.text)
    for job_id, final in zip(ids, finals, strict=True):
        own = [event for event in events if event["job_id"] == job_id]
        statuses = [event["status"] for event in own]
        assert statuses == sorted(statuses, key=ORDER.index), statuses  # each job's own order
        # Only changes (ids[1] is listed twice but followed once): no event twice in a row, one terminal
        # event, positions only fall (a position repeats only with a promise that moved: a new ETA).
        assert all(a != b for a, b in pairwise(own)), own
        assert [event["status"] for event in own].count("done") == 1, own
        positions = [event["position"] for event in own if event["status"] == "queued"]
        assert positions == sorted(positions, reverse=True), positions
        assert own[-1] == final and final["status"] == "done"


async def test_the_stream_is_live_per_job_and_a_leaving_client_stops_the_followers(tmp_path: Path) -> None:
    scorer = GatedScorer()
    async with lab_app(tmp_path, scorer) as (app, client):
        first = await submit(client, "첫 리뷰")
        await asyncio.to_thread(scorer.wait_entered)
        second, third = await submit(client, "둘째 리뷰"), await submit(client, "셋째 리뷰")
        ids = [first["job_id"], second["job_id"], third["job_id"]]
        tap = EventTap(app, "/api/queue/events", query(*ids))
        # Before the model moves at all, every job has said where it stands.
        await tap.until(lambda t: all(events_of(t.events, job_id) for job_id in ids))
        assert tap.status == 200
        assert [events_of(tap.events, job_id)[0]["status"] for job_id in ids] == ["running", "queued", "queued"]
        assert [events_of(tap.events, job_id)[0]["position"] for job_id in ids[1:]] == [1, 2]

        scorer.release()  # the first job ends; the second starts, the third moves up
        await tap.until(lambda t: events_of(t.events, ids[0])[-1]["status"] == "done")
        await tap.until(lambda t: events_of(t.events, ids[2])[-1]["position"] == 1)
        assert not tap.ended

        followers = [t for t in asyncio.all_tasks() if t.get_name().startswith("ticket-follow")]
        assert len(followers) == 2  # the first job ended, so its follower did too
        await tap.disconnect()
        assert all(task.done() for task in followers)  # nothing keeps polling for a client that left
        scorer.open()


async def test_the_stream_ends_at_once_when_every_job_is_already_terminal(tmp_path: Path) -> None:
    scorer = GatedScorer(gated=False)
    async with lab_app(tmp_path, scorer) as (app, client):
        ids = [(await submit(client, f"끝난 리뷰 {i}"))["job_id"] for i in range(2)]
        for job_id in ids:
            await settles(client, job_id, "done")
        tap = EventTap(app, "/api/queue/events", query(*ids))
        await tap.until(lambda t: t.ended)
    assert [kind for kind, _ in tap.events] == ["status", "status"]
    assert {data["job_id"] for _, data in tap.events} == set(ids)


@pytest.mark.parametrize(
    ("url", "status"),
    [
        ("/api/queue/events", 422),  # no job_id
        ("/api/queue/events?" + query(*(f"j{i}" for i in range(MAX_FOLLOWED_JOBS + 1))), 422),
        ("/api/queue/events?" + query("nope", "also-nope"), 404),  # none of them exists
    ],
)
async def test_bad_lists_of_jobs_are_a_clear_4xx(lab_client: LabClientFactory, url: str, status: int) -> None:
    async with lab_client(GatedScorer(gated=False)) as client:
        response = await client.get(url)
    assert response.status_code == status, response.text
    assert "job_id" in response.text or "None of the 2 listed jobs" in response.text
