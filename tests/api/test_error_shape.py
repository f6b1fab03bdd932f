"""Every 4xx/5xx body has one shape, `{"error": "<code>", "detail": "<sentence>"}`, on every route.

Framework errors (validation 422, routing 404/405, body reading 400/413) included; each case
here answered in FastAPI's or Starlette's own shape before app/contract/error_handlers.py.
"""

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from app.errors import TABLE
from tests.conftest import LabClientFactory
from tests.fakes import GatedScorer

JSON = {"content-type": "application/json"}
POSTS = ["/api/naive/predict", "/api/limited/predict", "/api/batched/predict", "/api/queue/jobs"]
EXTRA_KEYS = {"fields", "retry_after_s", "hold_token", "hold_grace_s", "reason"}  # the only keys an error body may add

BAD_REQUESTS: list[tuple[str, str, dict[str, Any], int, str]] = [
    *[("POST", url, {"content": b"{}", "headers": JSON}, 422, "invalid_request") for url in POSTS],
    *[("POST", url, {"content": b'{"text": ', "headers": JSON}, 422, "invalid_request") for url in POSTS],
    *[("POST", url, {"json": {"text": "   "}}, 422, "invalid_review") for url in POSTS],
    *[("POST", url, {"content": b"0\x0f\x02C\xff\xfeK\x1d", "headers": JSON}, 400, "bad_request") for url in POSTS],
    *[("POST", url, {"content": b"x" * 20_000, "headers": JSON}, 413, "body_too_large") for url in POSTS],
    *[("GET", url, {}, 405, "method_not_allowed") for url in POSTS],
    ("GET", "/nope", {}, 404, "not_found"),
    ("GET", "/api/queue/jobs/unknown", {}, 404, "job_not_found"),
    ("DELETE", "/api/queue/jobs/unknown", {}, 404, "job_not_found"),
    ("PUT", "/api/queue/jobs/unknown", {}, 405, "method_not_allowed"),
    ("GET", "/api/queue/jobs/unknown/events", {}, 404, "job_not_found"),
    ("GET", "/api/queue/events", {}, 422, "invalid_request"),
    ("GET", "/api/queue/events?job_id=unknown", {}, 404, "job_not_found"),
    ("POST", "/api/queue/jobs", {"json": {"text": "좋아요", "max_time_in_queue_s": 0}}, 422, "invalid_job"),
    ("POST", "/api/queue/jobs", {"json": {"text": "좋아요", "webhook_url": "http://x"}}, 422, "webhook_refused"),
    ("DELETE", "/api/stats", {}, 405, "method_not_allowed"),
]


def assert_one_shape(response: httpx.Response) -> dict[str, Any]:
    body: dict[str, Any] = response.json()
    assert isinstance(body.get("error"), str) and body["error"], body
    assert isinstance(body.get("detail"), str) and body["detail"], body
    assert set(body) - {"error", "detail"} <= EXTRA_KEYS, body
    assert body["error"] in {kind.code for kind in TABLE}, body
    return body


@pytest.mark.parametrize(("method", "url", "kwargs", "status", "code"), BAD_REQUESTS)
async def test_every_route_answers_a_bad_request_in_the_one_shape(
    lab_client: LabClientFactory, method: str, url: str, kwargs: dict[str, Any], status: int, code: str
) -> None:
    async with lab_client(GatedScorer(gated=False)) as client:
        response = await client.request(method, url, **kwargs)
    assert response.status_code == status, response.text
    assert assert_one_shape(response)["error"] == code


async def test_validation_422_lists_every_field_under_fields(lab_client: LabClientFactory) -> None:
    async with lab_client(GatedScorer(gated=False)) as client:
        response = await client.post("/api/limited/predict", json={"text": 1, "extra": True})
    body = assert_one_shape(response)
    assert [f["loc"] for f in body["fields"]] == [["body", "text"], ["body", "extra"]]
    assert "`text`" in body["detail"]


async def test_streamed_body_over_cap_is_413_in_the_one_shape(lab_client: LabClientFactory) -> None:
    async def chunks() -> AsyncIterator[bytes]:
        for _ in range(10):
            yield b"x" * 4000

    async with lab_client(GatedScorer(gated=False), max_body_bytes=16_384) as client:
        response = await client.post("/api/limited/predict", content=chunks(), headers=JSON)
    assert response.status_code == 413
    assert assert_one_shape(response)["error"] == "body_too_large"


async def test_refusals_with_a_hint_keep_retry_after_in_header_and_body(lab_client: LabClientFactory) -> None:
    scorer = GatedScorer()
    async with lab_client(scorer, limited_seats=0) as client:
        first = asyncio.create_task(client.post("/api/limited/predict", json={"text": "먼저"}))
        await asyncio.to_thread(scorer.wait_entered)
        refused = await client.post("/api/limited/predict", json={"text": "나중"})
        scorer.open()
        assert (await first).status_code == 200
    body = assert_one_shape(refused)
    assert refused.status_code == 429 and body["error"] == "box_full"
    assert body["retry_after_s"] == int(refused.headers["Retry-After"]) >= 1


async def test_the_openapi_document_declares_error_bodies_and_headers(lab_client: LabClientFactory) -> None:
    async with lab_client(GatedScorer(gated=False), limited_seats=3, batch_window_s=0.04) as client:
        spec = (await client.get("/api/openapi.json")).json()
    paths = spec["paths"]
    limited = paths["/api/limited/predict"]["post"]
    assert limited["summary"] == "② limited: 1 in flight + 3 seats"
    assert set(limited["responses"]["200"]["headers"]) == {"Server-Timing", "X-Cache", "Seat-Hold-Result"}
    assert "Retry-After" in limited["responses"]["429"]["headers"]
    assert "X-Batch-Size" in paths["/api/batched/predict"]["post"]["responses"]["200"]["headers"]
    assert "40 ms" in paths["/api/batched/predict"]["post"]["description"]
    submit = paths["/api/queue/jobs"]["post"]["responses"]
    assert {"Location", "X-Cache"} <= set(submit["202"]["headers"])
    for status in ("409", "422", "429"):
        assert submit[status]["content"]["application/json"]["schema"]["$ref"].endswith("/ErrorOut"), status
    assert paths["/api/queue/jobs/{job_id}"]["get"]["responses"]["404"]["content"]
    assert set(spec["components"]["schemas"]["ErrorOut"]["required"]) == {"error", "detail"}
