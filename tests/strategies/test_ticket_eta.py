"""The event stream says what GET says: positions and ETAs at each hand-over between tickets.

The service clock is pinned to 100 s a review, so an ETA tells exactly which work it counted
(one review more or less is 100 s) and the few milliseconds between two reads do not matter.
"""

import asyncio
from pathlib import Path
from typing import Any

import httpx
import pytest
from asgi_lifespan import LifespanManager

from app.engine.clock import ServiceClock
from app.jobs.store import Ahead
from app.lab import Lab
from app.main import create_app
from app.settings import Settings
from tests.fakes import GatedScorer
from tests.jobs.test_follow_many import EventTap, events_of, lab_app, query
from tests.jobs.test_lifecycle import FAST, job, submit
from tests.waiting import eventually

REVIEW_S = 100.0
SLACK_S = 10.0  # a tenth of a review: far above the time between two reads, far below one review


@pytest.fixture(autouse=True)
def pinned_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    def estimate_s(self: ServiceClock, reviews: int, chars: int) -> float:
        return REVIEW_S * max(reviews, 0)

    monkeypatch.setattr(ServiceClock, "estimate_s", estimate_s)


async def lane_holds(client: httpx.AsyncClient, reviews: int) -> bool:
    return bool((await client.get("/api/stats")).json()["lane"]["pending_reviews"] >= reviews)


async def is_done(client: httpx.AsyncClient, job_id: str) -> bool:
    return bool((await job(client, job_id))["status"] == "done")


def latest(tap: EventTap, job_id: str) -> dict[str, Any]:
    return events_of(tap.events, job_id)[-1]


async def stream_agrees_with_get(tap: EventTap, client: httpx.AsyncClient, job_id: str, eta_s: float) -> None:
    """The stream's latest event and a GET now: same status and position, both ETAs about `eta_s`."""
    polled, streamed = await job(client, job_id), latest(tap, job_id)
    assert (streamed["status"], streamed["position"]) == (polled["status"], polled["position"])
    assert abs(streamed["eta_seconds"] - eta_s) < SLACK_S, (streamed, eta_s)
    assert abs(polled["eta_seconds"] - eta_s) < SLACK_S, (polled, eta_s)


async def test_each_hand_over_streams_the_etas_get_returns(tmp_path: Path) -> None:
    scorer = GatedScorer()
    async with lab_app(tmp_path, scorer) as (app, client):
        first = await submit(client, "첫 티켓")
        await asyncio.to_thread(scorer.wait_entered)
        # A ② request waits on the lane behind the first ticket: the next ticket will wait behind it.
        seated = asyncio.create_task(client.post("/api/limited/predict", json={"text": "② 리뷰"}))
        await eventually(lambda: lane_holds(client, 1))
        second, third = (await submit(client, "둘째 티켓"))["job_id"], (await submit(client, "셋째 티켓"))["job_id"]
        tap = EventTap(app, "/api/queue/events", query(second, third))
        await tap.until(lambda t: bool(events_of(t.events, second) and events_of(t.events, third)))

        scorer.release()  # the first ticket ends; ② infers; the second ticket is claimed and waits for the lane
        await asyncio.to_thread(scorer.wait_entered)
        await eventually(lambda: is_done(client, first["job_id"]))
        await tap.until(lambda t: latest(t, second)["status"] == "running" and latest(t, third)["position"] == 1)
        await stream_agrees_with_get(tap, client, second, 2 * REVIEW_S)  # ② then itself, not 0 nor ②'s rest
        await stream_agrees_with_get(tap, client, third, 3 * REVIEW_S)

        scorer.release()  # ② ends (far sooner than its 100 s): the second ticket starts
        assert (await seated).status_code == 200
        await asyncio.to_thread(scorer.wait_entered)
        await tap.until(lambda t: latest(t, second)["eta_seconds"] < 1.5 * REVIEW_S)
        await stream_agrees_with_get(tap, client, second, REVIEW_S)
        await tap.until(lambda t: latest(t, third)["eta_seconds"] < 2.5 * REVIEW_S)
        await stream_agrees_with_get(tap, client, third, 2 * REVIEW_S)

        scorer.release()  # the plain hand-over: the third ticket starts with a whole review ahead of it
        await asyncio.to_thread(scorer.wait_entered)
        await tap.until(lambda t: latest(t, third)["status"] == "running")
        await tap.until(lambda t: latest(t, third)["eta_seconds"] > 0.5 * REVIEW_S)
        await stream_agrees_with_get(tap, client, third, REVIEW_S)
        scorer.open()
        await tap.until(lambda t: t.ended)


async def test_a_claim_between_a_tickets_reads_is_counted_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A ticket's answer reads the jobs ahead from the store, then the lane: if this box's worker claims the job
    ahead in between and hands it to the lane, that job is in both, and the ticket is promised a review too late
    (a busy host makes the gap long enough; the stream then promises it too, until its next read)."""
    scorer = GatedScorer()
    overrides: dict[str, Any] = {"warmup": False, "job_store": f"sqlite:///{tmp_path / 'jobs.db'}", **FAST}
    app = create_app(Settings(**overrides), scorer)
    async with LifespanManager(app) as manager:
        lab: Lab = app.state.lab
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=manager.app), base_url="http://lab") as client:
            await submit(client, "달리는 티켓")
            await asyncio.to_thread(scorer.wait_entered)
            await submit(client, "둘째 티켓")
            third = (await submit(client, "셋째 티켓"))["job_id"]
            read_ahead, torn = lab.store.ahead, False

            async def ahead_read_before_a_claim(job_id: str) -> Ahead | None:
                nonlocal torn
                ahead = await read_ahead(job_id)
                if not torn:  # the second ticket counted ahead; now the worker claims it and the lane takes it
                    torn = True
                    scorer.release()
                    await asyncio.to_thread(scorer.wait_entered)
                return ahead

            monkeypatch.setattr(lab.store, "ahead", ahead_read_before_a_claim)
            polled = await job(client, third)
            scorer.open()
    assert torn and polled["position"] == 1, polled
    assert abs(polled["eta_seconds"] - 2 * REVIEW_S) < SLACK_S, polled  # the second on the lane, then itself


async def batched_holds(client: httpx.AsyncClient, reviews: int) -> bool:
    return bool((await client.get("/api/stats")).json()["paths"]["batched"]["waiting"] >= reviews)


async def limited_seats(client: httpx.AsyncClient, waiting: int) -> bool:
    return bool((await client.get("/api/stats")).json()["paths"]["limited"]["waiting"] >= waiting)


async def test_a_tickets_eta_counts_the_seated_and_batched_work_that_shares_its_lane(tmp_path: Path) -> None:
    """A running ticket and two queued; then ② (one on the lane, two seated) and ③ (a batch of two held).

    The paths take turns on the lane: the next ticket (1 turn) waits for one seated ② and the ③
    batch, the one after it (2 turns) for both seated ② requests and the batch. The stream
    re-promises when they arrive, though nothing changed in the job store.
    """
    scorer = GatedScorer()
    async with lab_app(tmp_path, scorer) as (app, client):
        await submit(client, "달리는 티켓")
        await asyncio.to_thread(scorer.wait_entered)
        second, third = (await submit(client, "둘째 티켓"))["job_id"], (await submit(client, "셋째 티켓"))["job_id"]
        tap = EventTap(app, "/api/queue/events", query(second, third))
        await tap.until(lambda t: bool(events_of(t.events, second) and events_of(t.events, third)))
        assert abs(latest(tap, third)["eta_seconds"] - 3 * REVIEW_S) < SLACK_S  # the lane alone

        limited = [asyncio.create_task(client.post("/api/limited/predict", json={"text": f"② {i}"})) for i in range(3)]
        await eventually(lambda: limited_seats(client, 2))  # one on the lane behind the ticket, two seated
        batched = [asyncio.create_task(client.post("/api/batched/predict", json={"text": f"③ {i}"})) for i in range(2)]
        await eventually(lambda: batched_holds(client, 2))
        lane_s = 2 * REVIEW_S  # the running ticket, and ② on the lane's queue
        second_s = lane_s + REVIEW_S + REVIEW_S + 2 * REVIEW_S  # itself, one seat, the batch
        third_s = lane_s + 2 * REVIEW_S + 2 * REVIEW_S + 2 * REVIEW_S  # the second and itself, two seats, the batch
        await tap.until(lambda t: latest(t, third)["eta_seconds"] > third_s - SLACK_S)
        await stream_agrees_with_get(tap, client, second, second_s)
        await stream_agrees_with_get(tap, client, third, third_s)
        scorer.open()
        assert [r.status_code for r in await asyncio.gather(*limited, *batched)] == [200] * 5
        await tap.until(lambda t: t.ended)
