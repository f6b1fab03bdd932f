"""Path 4: a ticket at once with position and ETA; every job reaches done, in order."""

import asyncio

import httpx
import pytest

from app.engine.cache import ResultCache
from app.engine.lane import InferenceLane
from app.jobs.in_memory import MemoryJobStore
from app.paths.parts import Parts
from app.paths.pipeline import Pipeline
from app.paths.ticket_roles import build
from app.paths.tickets import JobRequest
from app.settings import Settings
from tests.conftest import LabClientFactory
from tests.fakes import GatedScorer
from tests.waiting import eventually


async def submit(client: httpx.AsyncClient, text: str) -> httpx.Response:
    return await client.post("/api/queue/jobs", json={"text": text})


async def test_tickets_positions_count_up_and_all_jobs_finish(lab_client: LabClientFactory) -> None:
    scorer = GatedScorer()
    async with lab_client(scorer) as client:
        tickets = [await submit(client, f"리뷰 {i}") for i in range(6)]
        assert [t.status_code for t in tickets] == [202] * 6
        bodies = [t.json() for t in tickets]
        assert [b["position"] for b in bodies] == list(range(6))
        assert all(b["status"] == "queued" for b in bodies)
        etas = [b["eta_seconds"] for b in bodies]
        assert etas == sorted(etas) and etas[0] > 0
        assert tickets[0].headers["Location"] == f"/api/queue/jobs/{bodies[0]['job_id']}"

        scorer.open()

        async def all_done() -> bool:
            statuses = [(await client.get(f"/api/queue/jobs/{b['job_id']}")).json()["status"] for b in bodies]
            return statuses == ["done"] * 6

        await eventually(all_done)
        done = [(await client.get(f"/api/queue/jobs/{b['job_id']}")).json() for b in bodies]
    assert scorer.calls == [[f"리뷰 {i}"] for i in range(6)]
    for i, job in enumerate(done):
        assert job["result"]["topics"][0]["id"] == f"echo:리뷰 {i}"
        assert job["waited_ms"] >= 0 and job["inference_ms"] >= 0


async def test_tickets_queue_full_gets_429(lab_client: LabClientFactory) -> None:
    scorer = GatedScorer()
    async with lab_client(scorer, queue_max_jobs=3) as client:
        first = await submit(client, "실행 중")
        await asyncio.to_thread(scorer.wait_entered)
        accepted = [await submit(client, f"대기 {i}") for i in range(3)]
        refused = await submit(client, "자리 없음")
        scorer.open()
    assert first.status_code == 202
    assert [r.status_code for r in accepted] == [202] * 3
    assert refused.status_code == 429
    assert refused.json()["error"] == "job_queue_full"
    assert int(refused.headers["Retry-After"]) >= 1


async def test_unknown_job_is_404(lab_client: LabClientFactory) -> None:
    async with lab_client(GatedScorer(gated=False)) as client:
        response = await client.get("/api/queue/jobs/nope")
    assert response.status_code == 404
    assert response.json()["error"] == "job_not_found"


async def test_failed_job_reports_failed_and_worker_goes_on(lab_client: LabClientFactory) -> None:
    scorer = GatedScorer(gated=False, fail_on="망가진 리뷰")
    async with lab_client(scorer) as client:
        bad = (await submit(client, "망가진 리뷰")).json()["job_id"]
        good = (await submit(client, "멀쩡한 리뷰")).json()["job_id"]

        async def settled() -> bool:
            statuses = [(await client.get(f"/api/queue/jobs/{j}")).json()["status"] for j in (bad, good)]
            return statuses == ["failed", "done"]

        await eventually(settled)
        failed = (await client.get(f"/api/queue/jobs/{bad}")).json()
    assert "망가진" in failed["error"]


async def eta_behind(first: str) -> float:
    """The ETA promised to a short review queued behind `first`, on a lane that has measured
    (by the twin's shape) that length costs time. Nothing runs: the worker is not started."""
    scorer = GatedScorer()
    lane = InferenceLane(scorer)
    lane.clock.observe(3.0, 1, 40)  # the cold first run, kept out of the length fit
    for chars in (20, 80, 150, 300):
        lane.clock.observe(0.5 + 0.01 * chars, 1, chars)
    store = MemoryJobStore()
    pipeline = Pipeline(ResultCache(maxsize=16, ttl_s=60))
    service = build(Parts(Settings(warmup=False), scorer, lane, pipeline, store, None)).service
    await service.submit(JobRequest(first))
    ticket = await service.submit(JobRequest("짧은 리뷰"))
    assert ticket.position == 1 and ticket.eta_seconds is not None
    assert (await service.status(ticket.job.id)).eta_seconds == pytest.approx(ticket.eta_seconds)
    return ticket.eta_seconds


async def test_a_long_review_ahead_makes_a_later_eta_longer_than_a_short_one() -> None:
    behind_short = await eta_behind("좋아요")
    behind_long = await eta_behind("배송이 늦었어요. " * 20)
    assert behind_short == pytest.approx((0.5 + 0.01 * 3) + (0.5 + 0.01 * 5))
    assert behind_long == pytest.approx((0.5 + 0.01 * 200) + (0.5 + 0.01 * 5))
    assert behind_long > behind_short
