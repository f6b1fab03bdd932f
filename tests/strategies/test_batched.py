"""Path 3: a burst rides shared batches, never above the cap, each caller gets its own answer."""

import asyncio

import httpx

from tests.conftest import LabClientFactory
from tests.fakes import GatedScorer
from tests.waiting import eventually


async def post(client: httpx.AsyncClient, text: str) -> httpx.Response:
    return await client.post("/api/batched/predict", json={"text": text})


async def test_batched_full_batches_of_eight_each_with_its_own_result(lab_client: LabClientFactory) -> None:
    scorer = GatedScorer(gated=False)
    # A window of a minute: only "batch full" can close a batch, so sizes are exact.
    async with lab_client(scorer, batch_window_s=60.0, batch_max=8) as client:
        texts = [f"리뷰 {i}" for i in range(16)]
        responses = await asyncio.gather(*(post(client, t) for t in texts))
    assert [r.status_code for r in responses] == [200] * 16
    assert sorted(len(call) for call in scorer.calls) == [8, 8]
    for text, response in zip(texts, responses, strict=True):
        assert response.json()["top"]["id"] == f"echo:{text}"
        assert response.headers["X-Batch-Size"] == "8"


async def test_batched_timer_closes_a_partial_batch(lab_client: LabClientFactory) -> None:
    scorer = GatedScorer(gated=False)
    async with lab_client(scorer, batch_window_s=0.5, batch_max=8) as client:
        responses = await asyncio.gather(*(post(client, f"짧은 리뷰 {i}") for i in range(3)))
    assert [r.status_code for r in responses] == [200] * 3
    assert [len(call) for call in scorer.calls] == [3]
    assert {r.headers["X-Batch-Size"] for r in responses} == {"3"}


async def test_batched_burst_of_twenty_never_exceeds_cap(lab_client: LabClientFactory) -> None:
    scorer = GatedScorer(gated=False)
    async with lab_client(scorer, batch_window_s=0.5, batch_max=8) as client:
        responses = await asyncio.gather(*(post(client, f"리뷰 {i}") for i in range(20)))
    sizes = [len(call) for call in scorer.calls]
    assert sum(sizes) == 20
    assert max(sizes) == 8
    assert all(1 < size <= 8 for size in sizes)
    assert all(int(r.headers["X-Batch-Size"]) > 1 for r in responses)


async def test_batched_failure_reaches_only_the_bad_text_and_lane_survives(lab_client: LabClientFactory) -> None:
    scorer = GatedScorer(gated=False, fail_on="독이 든 리뷰")
    async with lab_client(scorer, batch_window_s=60.0, batch_max=2) as client:
        mixed = await asyncio.gather(post(client, "독이 든 리뷰"), post(client, "평범한 리뷰"))
        assert [r.status_code for r in mixed] == [503, 200]
        assert mixed[0].json()["error"] == "inference_failed"
        assert mixed[1].json()["top"]["id"] == "echo:평범한 리뷰"
        assert mixed[1].headers["X-Batch-Size"] == "1"  # scored alone after the batch failed
        good = await asyncio.gather(post(client, "괜찮은 리뷰 1"), post(client, "괜찮은 리뷰 2"))
        assert [r.status_code for r in good] == [200, 200]
        assert (await client.get("/health")).status_code == 200


async def test_batched_refuses_when_predicted_wait_is_over_the_limit(lab_client: LabClientFactory) -> None:
    scorer = GatedScorer(gated=False)
    # The service clock starts at 1 s per review: one review gathering predicts a 1 s wait.
    async with lab_client(scorer, batch_window_s=60.0, batch_max=8, batch_max_wait_s=0.5) as client:
        first = asyncio.create_task(post(client, "먼저 온 리뷰"))

        async def gathering() -> bool:
            return bool((await client.get("/api/stats")).json()["paths"]["batched"]["waiting"] == 1)

        await eventually(gathering)
        refused = await post(client, "늦게 온 리뷰")
        first.cancel()
    assert refused.status_code == 429
    assert refused.json()["error"] == "box_full"
    assert int(refused.headers["Retry-After"]) >= 1
    assert scorer.calls == []
