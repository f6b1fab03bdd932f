"""Path 2: 1 in flight + 4 seats; the rest are refused at once with an honest hint."""

import asyncio

import httpx

from tests.conftest import LabClientFactory
from tests.fakes import GatedScorer
from tests.waiting import eventually


async def post(client: httpx.AsyncClient, text: str) -> httpx.Response:
    return await client.post("/api/limited/predict", json={"text": text})


async def test_limited_admits_five_and_rejects_seven_with_retry_after(lab_client: LabClientFactory) -> None:
    scorer = GatedScorer()
    async with lab_client(scorer) as client:
        tasks = [asyncio.create_task(post(client, f"리뷰 {i}")) for i in range(12)]
        # Nothing admitted can finish while the scorer is gated, so the first 7 answers are the refusals.
        early = []
        for next_done in asyncio.as_completed(tasks):
            early.append(await next_done)
            if len(early) == 7:
                break
        assert [r.status_code for r in early] == [429] * 7
        for response in early:
            assert int(response.headers["Retry-After"]) >= 1
            assert response.json()["error"] == "box_full"
        stats = (await client.get("/api/stats")).json()
        assert stats["paths"]["limited"]["seats_taken"] == 5
        scorer.release(5)
        responses = await asyncio.gather(*tasks)
    assert sorted(r.status_code for r in responses) == [200] * 5 + [429] * 7
    assert scorer.max_active == 1
    assert len(scorer.calls) == 5


async def test_limited_retry_after_grows_with_the_queue(lab_client: LabClientFactory) -> None:
    """Without holds the hint is when every waiting seat is free again (with holds: test_limited_holds.py)."""
    scorer = GatedScorer()
    async with lab_client(scorer, limited_seats=1, limited_hold_grace_s=0) as client:
        first = asyncio.create_task(post(client, "첫 번째"))
        await asyncio.to_thread(scorer.wait_entered)
        second = asyncio.create_task(post(client, "두 번째"))

        async def both_seated() -> bool:
            return bool((await client.get("/api/stats")).json()["paths"]["limited"]["seats_taken"] == 2)

        await eventually(both_seated)
        refused = await post(client, "세 번째")
        assert refused.status_code == 429
        assert refused.json()["error"] == "box_full" and refused.json()["reason"] == "seats_full"
        hint_with_queue = int(refused.headers["Retry-After"])
        scorer.open()
        await asyncio.gather(first, second)
    # One running plus one waiting: the hint covers at least the waiting one's whole turn.
    assert hint_with_queue >= 2


async def test_limited_waited_too_long_gets_503(lab_client: LabClientFactory) -> None:
    scorer = GatedScorer()
    async with lab_client(scorer, limited_max_wait_s=0.2) as client:
        first = asyncio.create_task(post(client, "오래 걸리는 리뷰"))
        await asyncio.to_thread(scorer.wait_entered)
        late = await post(client, "기다리다 지친 리뷰")
        assert late.status_code == 503
        assert late.json()["error"] == late.json()["reason"] == "waited_too_long"
        assert int(late.headers["Retry-After"]) >= 1
        # The page draws its time as server wait, not as an unexplained gap.
        assert late.headers["Server-Timing"].startswith("wait;dur=")
        assert float(late.headers["Server-Timing"].removeprefix("wait;dur=")) >= 200
        scorer.open()
        assert (await first).status_code == 200
    assert scorer.calls == [["오래 걸리는 리뷰"]]


async def test_limited_429_holds_a_seat_that_its_token_claims_over_http(lab_client: LabClientFactory) -> None:
    scorer = GatedScorer()
    async with lab_client(scorer, limited_seats=1) as client:
        first = asyncio.create_task(post(client, "첫 번째"))
        await asyncio.to_thread(scorer.wait_entered)
        second = asyncio.create_task(post(client, "두 번째"))

        async def full() -> bool:
            return bool((await client.get("/api/stats")).json()["paths"]["limited"]["seats_taken"] == 2)

        await eventually(full)
        refused = await post(client, "세 번째")
        assert refused.status_code == 429
        token = refused.headers["Seat-Hold"]
        assert refused.json()["hold_token"] == token and refused.json()["error"] == "box_full"
        forged = await client.post(
            "/api/limited/predict", json={"text": "위조"}, headers={"Seat-Hold": token[:-2] + "zz"}
        )
        assert forged.status_code == 429 and forged.headers["Seat-Hold-Result"] == "forged"
        stats = (await client.get("/api/stats")).json()["paths"]["limited"]
        assert stats["held"] == 2 and stats["seats_taken"] == 2  # the forged one's refusal was offered one too
        scorer.release(1)
        assert (await first).status_code == 200
        scorer.open()
        back = await client.post("/api/limited/predict", json={"text": "세 번째"}, headers={"Seat-Hold": token})
        assert back.status_code == 200 and back.headers["Seat-Hold-Result"] == "seated"
        await second
        metrics = (await client.get("/metrics")).text
    assert 'review_seat_hold_results_total{result="seated"} 1.0' in metrics
    assert 'review_seat_hold_results_total{result="forged"} 1.0' in metrics
    assert "review_seat_holds_issued_total 2.0" in metrics
