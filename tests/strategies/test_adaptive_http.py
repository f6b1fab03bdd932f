"""⑤ over HTTP: the same answers and headers as ①–④, bad input refused before the queue, refusals that say why."""

import asyncio

import httpx

from tests.conftest import LabClientFactory
from tests.fakes import GatedScorer
from tests.waiting import eventually

ROUTE = "/api/adaptive/predict"


async def post(client: httpx.AsyncClient, text: str) -> httpx.Response:
    return await client.post(ROUTE, json={"text": text})


async def test_adaptive_answers_with_the_headers_every_path_gives(lab_client: LabClientFactory) -> None:
    async with lab_client(GatedScorer(gated=False)) as client:
        first, again = await post(client, "빵이 맛있어요"), await post(client, "빵이 맛있어요")
    assert first.status_code == again.status_code == 200
    assert first.json()["path"] == "adaptive" and first.json()["top"]["id"] == "echo:빵이 맛있어요"
    assert first.headers["Server-Timing"].startswith("wait;dur=") and "infer;dur=" in first.headers["Server-Timing"]
    assert (first.headers["X-Cache"], again.headers["X-Cache"]) == ("miss", "hit")


async def test_adaptive_refuses_bad_input_with_a_4xx_and_queues_nothing(lab_client: LabClientFactory) -> None:
    scorer = GatedScorer(gated=False)
    async with lab_client(scorer) as client:
        blank, missing = await post(client, "   "), await client.post(ROUTE, json={})
        not_json = await client.post(ROUTE, content=b"\xff", headers={"Content-Type": "application/json"})
        stats = (await client.get("/api/stats")).json()
    assert (blank.status_code, missing.status_code) == (422, 422) and 400 <= not_json.status_code < 500
    assert scorer.calls == []
    assert stats["paths"]["adaptive"]["waiting"] == 0 and stats["rejections"]["adaptive"]["over_target"] == 0


async def test_adaptive_429_comes_at_once_with_reason_retry_after_and_server_timing(
    lab_client: LabClientFactory,
) -> None:
    scorer = GatedScorer()
    # The hints count the lane's default 1 s per review: a drain bound of 2 reviews promises a start within 2 while
    # the queue drains, to one running and two more (the third starts 2 s from now), not to a fourth (3 s).
    async with lab_client(scorer, adaptive_target_reviews=1, adaptive_drain_reviews=2) as client:
        tasks = [asyncio.create_task(post(client, f"리뷰 {i}")) for i in range(3)]

        async def all_admitted() -> bool:
            path = (await client.get("/api/stats")).json()["paths"]["adaptive"]
            return bool(path["in_flight"] + path["waiting"] == 3)

        await eventually(all_admitted)
        refused = await post(client, "넘치는 리뷰")  # awaited while the scorer is gated: nothing ran for it
        assert refused.status_code == 429
        assert refused.json()["error"] == "box_full" and refused.json()["reason"] == "over_target"
        assert int(refused.headers["Retry-After"]) >= 1
        assert float(refused.headers["Server-Timing"].removeprefix("wait;dur=")) < 500
        metrics = (await client.get("/metrics")).text
        scorer.open()
        assert [r.status_code for r in await asyncio.gather(*tasks)] == [200] * 3
    assert 'review_rejections_total{path="adaptive",reason="over_target"} 1.0' in metrics
    assert 'review_requests_total{path="adaptive",status="429"} 1.0' in metrics
    # Its own numbers too, for the Grafana row: two on the lane at most, and the refusal made its queue stand.
    assert 'review_path_state{name="limit",path="adaptive"} 2.0' in metrics
    assert 'review_path_state{name="standing",path="adaptive"} 1.0' in metrics


def as_student(name: str) -> dict[str, str]:
    return {"Cookie": f"lab_student={name * 16}"}


async def test_a_classmate_arriving_after_one_students_five_still_gets_a_place(lab_client: LabClientFactory) -> None:
    """Three places (a start within 2 reviews): a's five at once would take them all; a's repeats wait for the
    crowd's first moment, so b's one, arriving after all five, is admitted."""
    scorer = GatedScorer()
    async with lab_client(scorer, adaptive_target_reviews=1, adaptive_drain_reviews=2) as client:
        mine = [
            asyncio.create_task(client.post(ROUTE, json={"text": f"a의 리뷰 {i}"}, headers=as_student("a")))
            for i in range(5)
        ]

        async def a_first_admitted() -> bool:
            path = (await client.get("/api/stats")).json()["paths"]["adaptive"]
            return bool(path["in_flight"] + path["waiting"] == 1)

        await eventually(a_first_admitted)
        b = asyncio.create_task(client.post(ROUTE, json={"text": "b의 리뷰"}, headers=as_student("b")))

        async def b_admitted() -> bool:
            path = (await client.get("/api/stats")).json()["paths"]["adaptive"]
            return bool(path["in_flight"] + path["waiting"] >= 2)

        await eventually(b_admitted)
        scorer.open()
        answers = await asyncio.gather(*mine, b)
    assert answers[5].status_code == 200
    assert answers[0].status_code == 200 and {r.status_code for r in answers[1:5]} <= {200, 429}
