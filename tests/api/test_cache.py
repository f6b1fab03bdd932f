"""The same review again is answered from the cache, on every path, without inference."""

import httpx
import pytest

from tests.conftest import LabClientFactory
from tests.fakes import GatedScorer
from tests.waiting import eventually


@pytest.mark.parametrize("url", ["/api/naive/predict", "/api/limited/predict", "/api/batched/predict"])
async def test_cache_hit_skips_inference(lab_client: LabClientFactory, url: str) -> None:
    scorer = GatedScorer(gated=False)
    async with lab_client(scorer, batch_window_s=0.001) as client:
        first = await client.post(url, json={"text": "빵이 맛있어요"})
        again = await client.post(url, json={"text": "  빵이 맛있어요 "})
    assert first.headers["X-Cache"] == "miss"
    assert again.headers["X-Cache"] == "hit"
    assert again.json()["topics"] == first.json()["topics"]
    assert "wait;dur=0.0" in again.headers["Server-Timing"]
    assert len(scorer.calls) == 1


async def test_ticket_for_a_cached_review_is_done_at_once(lab_client: LabClientFactory) -> None:
    scorer = GatedScorer(gated=False)
    async with lab_client(scorer) as client:
        first = (await client.post("/api/queue/jobs", json={"text": "커피가 맛있어요"})).json()

        async def done() -> bool:
            job = (await client.get(f"/api/queue/jobs/{first['job_id']}")).json()
            return bool(job["status"] == "done")

        await eventually(done)
        again: httpx.Response = await client.post("/api/queue/jobs", json={"text": "커피가 맛있어요"})
    assert again.status_code == 202
    assert again.headers["X-Cache"] == "hit"
    assert again.json()["status"] == "done"
    assert again.json()["result"]["topics"][0]["id"] == "echo:커피가 맛있어요"
    assert len(scorer.calls) == 1
