"""Bad input gets a clear 4xx, never a 500, and never harms the lane."""

import pytest

from app.contract.schema import VISIBLE_PATTERN
from tests.conftest import LabClientFactory
from tests.fakes import GatedScorer

URLS = ["/api/naive/predict", "/api/limited/predict", "/api/batched/predict", "/api/queue/jobs"]
JSON = {"content-type": "application/json"}


@pytest.mark.parametrize("url", URLS)
@pytest.mark.parametrize(
    ("body", "status"),
    [
        ("{}", 422),  # missing text
        ('{"text": ""}', 422),
        ('{"text": "   "}', 422),
        ('{"text": 123}', 422),
        ('{"text": null}', 422),
        ('{"text": ["a"]}', 422),
        ('{"text": "좋아요", "extra": 1}', 422),
        ('{"text": "' + "가" * 2001 + '"}', 422),  # over max_text_chars
        ('{"text": ', 422),  # invalid JSON
        ("[]", 422),
        ("x" * 20_000, 413),  # over max_body_bytes
    ],
)
async def test_bad_input_is_a_clear_4xx(lab_client: LabClientFactory, url: str, body: str, status: int) -> None:
    scorer = GatedScorer(gated=False)
    async with lab_client(scorer) as client:
        response = await client.post(url, content=body.encode(), headers=JSON)
        assert response.status_code == status
        assert response.json()["detail"]
        assert (await client.get("/health")).status_code == 200
        ok = await client.post(url, json={"text": "그래도 잘 돼요"})
        assert ok.status_code in (200, 202)
    assert scorer.calls == [["그래도 잘 돼요"]] or url == "/api/queue/jobs"


async def test_overlong_text_message_names_the_limit(lab_client: LabClientFactory) -> None:
    async with lab_client(GatedScorer(gated=False), max_text_chars=10) as client:
        response = await client.post("/api/limited/predict", json={"text": "가" * 11})
    assert response.status_code == 422
    assert "10" in response.json()["detail"]


async def test_scorer_failure_is_503_and_lane_survives(lab_client: LabClientFactory) -> None:
    scorer = GatedScorer(gated=False, fail_on="폭탄")
    async with lab_client(scorer) as client:
        boom = await client.post("/api/limited/predict", json={"text": "폭탄"})
        assert boom.status_code == 503
        assert boom.json()["error"] == "inference_failed"
        naive = await client.post("/api/naive/predict", json={"text": "폭탄"})
        assert naive.status_code == 503
        fine = await client.post("/api/limited/predict", json={"text": "멀쩡해요"})
        assert fine.status_code == 200
        assert (await client.get("/health")).status_code == 200


@pytest.mark.parametrize("url", URLS)
async def test_body_that_is_not_utf8_is_a_documented_400(lab_client: LabClientFactory, url: str) -> None:
    """Found by the schemathesis fuzz (tests/api/test_fuzz.py): FastAPI answers 400, now in the OpenAPI."""
    scorer = GatedScorer(gated=False)
    async with lab_client(scorer) as client:
        response = await client.post(url, content=b"0\x0f\x02C\xff\xfeK\x1d", headers=JSON)
        documented = (await client.get("/api/openapi.json")).json()
        assert (await client.get("/health")).status_code == 200
    assert response.status_code == 400
    assert response.json()["detail"]
    operation = documented["paths"][url]["post"]
    assert "400" in operation["responses"]
    assert scorer.calls == []


async def test_openapi_states_the_text_contract(lab_client: LabClientFactory) -> None:
    """The fuzzer believed a blank or overlong text was valid; the document now says what the server enforces."""
    async with lab_client(GatedScorer(gated=False), max_text_chars=123) as client:
        documented = (await client.get("/api/openapi.json")).json()
    for model in ("ReviewIn", "JobIn"):
        text = documented["components"]["schemas"][model]["properties"]["text"]
        assert text["maxLength"] == 123
        # "At least one visible character", the same class the server checks (app/contract/schema.py).
        assert text["pattern"] == VISIBLE_PATTERN


async def test_openapi_states_the_ticket_queue_time_bounds(lab_client: LabClientFactory) -> None:
    """Found by the fuzz: max_time_in_queue_s = 0 was schema-valid but refused; the bounds are now documented."""
    async with lab_client(GatedScorer(gated=False), job_max_time_in_queue_cap_s=900) as client:
        documented = (await client.get("/api/openapi.json")).json()
        refused = await client.post("/api/queue/jobs", json={"text": "곧 만료될 리뷰", "max_time_in_queue_s": 0})
    bound = documented["components"]["schemas"]["JobIn"]["properties"]["max_time_in_queue_s"]
    assert (bound["minimum"], bound["maximum"]) == (1.0, 900)
    assert refused.status_code == 422 and "between 1 and 900" in refused.json()["detail"]


async def test_openapi_says_why_a_schema_valid_ticket_can_still_get_422(lab_client: LabClientFactory) -> None:
    """Found by `just fuzz` (2026-11-30): schema-valid `webhook_url`s got 422 `webhook_refused` (webhooks off,
    or a host that is not public or does not resolve: nothing a schema can say); the 422's description now does."""
    async with lab_client(GatedScorer(gated=False)) as client:
        documented = (await client.get("/api/openapi.json")).json()
        refused = await client.post(
            "/api/queue/jobs", json={"text": "웹훅 리뷰", "webhook_url": "https://example.com/h"}
        )
    assert refused.status_code == 422 and refused.json()["error"] == "webhook_refused"
    described = documented["paths"]["/api/queue/jobs"]["post"]["responses"]["422"]["description"]
    assert "webhook_url" in described and "Idempotency-Key" in described
