"""A client that hangs up while waiting is withdrawn: its review is never inferred, and it is counted."""

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx
from asgi_lifespan import LifespanManager
from prometheus_client import CollectorRegistry
from starlette.types import ASGIApp, Message

from app.main import create_app
from app.settings import Settings
from tests.fakes import GatedScorer
from tests.waiting import eventually


@dataclass
class Lab:
    app: ASGIApp
    client: httpx.AsyncClient
    registry: CollectorRegistry  # this app's own metrics

    async def stats(self) -> dict[str, Any]:
        body: dict[str, Any] = (await self.client.get("/api/stats")).json()
        return body


@asynccontextmanager
async def running_lab(scorer: GatedScorer, **overrides: Any) -> AsyncIterator[Lab]:
    # Tickets play no part here: the in-memory store keeps the test free of files.
    app = create_app(Settings(**{"warmup": False, "job_store": "memory://", **overrides}), scorer)
    async with LifespanManager(app) as manager:
        transport = httpx.ASGITransport(app=manager.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://lab", timeout=30) as client:
            yield Lab(manager.app, client, app.state.registry)


async def post_then_hang_up(app: ASGIApp, path: str, text: str, hang_up: asyncio.Event) -> int:
    """Send one request at the ASGI level; after the body, `receive` waits for `hang_up`, as a server's does."""
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(b"content-type", b"application/json"), (b"host", b"lab")],
        "client": ("127.0.0.1", 50000),
        "server": ("lab", 80),
    }
    body = json.dumps({"text": text}).encode()
    body_sent = False
    statuses: list[int] = []

    async def receive() -> Message:
        nonlocal body_sent
        if not body_sent:
            body_sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        await hang_up.wait()
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        if message["type"] == "http.response.start":
            statuses.append(message["status"])

    await app(scope, receive, send)
    return statuses[0]


def gone_count(lab: Lab, path: str) -> float:
    """Read from the app's own registry (each app has one), not the process-wide default."""
    return lab.registry.get_sample_value("review_client_gone_total", {"path": path}) or 0.0


async def test_limited_client_leaving_its_seat_is_never_inferred() -> None:
    scorer = GatedScorer()
    async with running_lab(scorer) as lab:
        first = asyncio.create_task(lab.client.post("/api/limited/predict", json={"text": "먼저 온 리뷰"}))
        await asyncio.to_thread(scorer.wait_entered)
        hang_up = asyncio.Event()
        before = gone_count(lab, "limited")
        leaver = asyncio.create_task(post_then_hang_up(lab.app, "/api/limited/predict", "떠난 손님", hang_up))

        async def seated() -> bool:
            return bool((await lab.stats())["paths"]["limited"]["seats_taken"] == 2)

        await eventually(seated)
        hang_up.set()
        assert await leaver == 499
        gone_after = gone_count(lab, "limited")  # the app's registry is read while the lab runs
        assert (await lab.stats())["paths"]["limited"]["seats_taken"] == 1
        scorer.open()
        assert (await first).status_code == 200
    assert scorer.calls == [["먼저 온 리뷰"]]
    assert gone_after == before + 1


async def test_limited_client_leaving_the_lane_queue_is_skipped_by_the_lane() -> None:
    scorer = GatedScorer()
    # A batch of one holds the lane, so the limited request waits in the lane's FIFO itself.
    async with running_lab(scorer, batch_max=1) as lab:
        busy = asyncio.create_task(lab.client.post("/api/batched/predict", json={"text": "레인을 잡은 리뷰"}))
        await asyncio.to_thread(scorer.wait_entered)
        hang_up = asyncio.Event()
        leaver = asyncio.create_task(post_then_hang_up(lab.app, "/api/limited/predict", "떠난 손님", hang_up))

        async def in_lane_queue() -> bool:
            return bool((await lab.stats())["lane"]["pending_reviews"] == 1)

        await eventually(in_lane_queue)
        hang_up.set()
        assert await leaver == 499
        scorer.open()
        assert (await busy).status_code == 200
        after = await lab.client.post("/api/limited/predict", json={"text": "다음 손님"})
        assert after.status_code == 200
        stats = await lab.stats()
    assert stats["lane"]["skipped"]["gone"] == 1
    assert scorer.calls == [["레인을 잡은 리뷰"], ["다음 손님"]]


async def test_batched_client_leaving_an_open_batch_is_left_out() -> None:
    scorer = GatedScorer(gated=False)
    # Only a full batch of three can close: the leaver sits in the open batch until then.
    async with running_lab(scorer, batch_window_s=60.0, batch_max=3) as lab:
        hang_up = asyncio.Event()
        before = gone_count(lab, "batched")
        leaver = asyncio.create_task(post_then_hang_up(lab.app, "/api/batched/predict", "떠난 손님", hang_up))

        async def gathering() -> bool:
            return bool((await lab.stats())["paths"]["batched"]["waiting"] == 1)

        await eventually(gathering)
        hang_up.set()
        assert await leaver == 499
        stayers = await asyncio.gather(
            *(lab.client.post("/api/batched/predict", json={"text": t}) for t in ("남은 손님 1", "남은 손님 2"))
        )
        stats = await lab.stats()
        gone_after = gone_count(lab, "batched")
    assert [r.status_code for r in stayers] == [200, 200]
    assert {r.headers["X-Batch-Size"] for r in stayers} == {"2"}
    assert scorer.calls == [["남은 손님 1", "남은 손님 2"]]
    assert stats["paths"]["batched"]["skipped_gone"] == 1
    assert gone_after == before + 1


async def test_batched_full_batch_whose_clients_all_left_never_reaches_the_lane() -> None:
    scorer = GatedScorer()
    async with running_lab(scorer, batch_max=1) as lab:
        busy = asyncio.create_task(lab.client.post("/api/limited/predict", json={"text": "레인을 잡은 리뷰"}))
        await asyncio.to_thread(scorer.wait_entered)
        hang_up = asyncio.Event()
        leaver = asyncio.create_task(post_then_hang_up(lab.app, "/api/batched/predict", "떠난 손님", hang_up))

        async def held_for_the_lane() -> bool:  # full (1 of 1), held back while the lane is busy
            return bool((await lab.stats())["paths"]["batched"]["waiting"] == 1)

        await eventually(held_for_the_lane)
        hang_up.set()
        assert await leaver == 499
        scorer.release()
        assert (await busy).status_code == 200

        async def skipped() -> bool:
            return bool((await lab.stats())["paths"]["batched"]["skipped_gone"] == 1)

        await eventually(skipped)
    assert scorer.calls == [["레인을 잡은 리뷰"]]
