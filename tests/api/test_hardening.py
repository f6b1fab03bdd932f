"""Text, encoder, counting and Allow items: each gets a clear, documented answer, never a 500, an
undocumented 422 or a wrong header."""

import asyncio
import json
import re
from collections.abc import Sequence
from pathlib import Path

import httpx
import pytest
from asgi_lifespan import LifespanManager

from app.engine.model import Ranking
from app.main import create_app
from app.settings import Settings
from kit.live import live_server
from tests.conftest import LabClientFactory
from tests.fakes import GatedScorer

JSON = {"content-type": "application/json"}
POSTS = ["/api/naive/predict", "/api/limited/predict", "/api/batched/predict", "/api/queue/jobs"]
LONE_SURROGATE = b'{"text": "\\ud800 \xec\xa2\x8b\xec\x95\x84\xec\x9a\x94"}'  # "\ud800 좋아요"
INVISIBLE_ONLY = ["\u200b\u200b", "\x00", "\ufeff", "\u200b\u3164\u00ad", "\x1c", "\u2060\u200d"]
# JSON Schema patterns are ECMA-262: there `\s` is this class (U+001C-001F are NOT spaces, unlike in Python).
ECMA_SPACE = "\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"


def ecma_search(pattern: str, text: str) -> bool:
    """Evaluate a documented pattern the way a JSON Schema validator would."""
    translated = pattern.replace(r"\S", f"[^{ECMA_SPACE}]").replace(r"\s", f"[{ECMA_SPACE}]")
    return re.search(translated, text) is not None


@pytest.mark.parametrize("url", POSTS)
async def test_a_lone_surrogate_is_refused_before_anything_touches_it(lab_client: LabClientFactory, url: str) -> None:
    """A lone surrogate cannot be encoded for the model or hashed for the cache: it must be refused with a 422 before
    it reaches the lane, the cache or the ticket store on any path."""
    scorer = GatedScorer(gated=False)
    async with lab_client(scorer) as client:
        response = await client.post(url, content=LONE_SURROGATE, headers=JSON)
        jobs = (await client.get("/api/stats")).json()["jobs"]
    assert response.status_code == 422, response.text
    assert response.json()["error"] == "invalid_review" and "surrogate" in response.json()["detail"]
    assert scorer.calls == [] and sum(jobs.values()) == 0


async def test_one_bad_text_never_fails_the_rest_of_its_batch(lab_client: LabClientFactory) -> None:
    scorer = GatedScorer(gated=False)
    async with lab_client(scorer, batch_window_s=60.0, batch_max=5) as client:
        good = [client.post("/api/batched/predict", json={"text": f"리뷰 {i}"}) for i in range(5)]
        bad = client.post("/api/batched/predict", content=LONE_SURROGATE, headers=JSON)
        *answers, refused = await asyncio.gather(*good, bad)
    assert [r.status_code for r in answers] == [200] * 5 and refused.status_code == 422
    assert scorer.calls == [[f"리뷰 {i}" for i in range(5)]]


@pytest.mark.parametrize("text", INVISIBLE_ONLY)
async def test_text_of_only_invisible_characters_is_refused(lab_client: LabClientFactory, text: str) -> None:
    scorer = GatedScorer(gated=False)
    async with lab_client(scorer) as client:
        responses = [await client.post(url, json={"text": text}) for url in POSTS]
    assert [r.status_code for r in responses] == [422] * 4
    assert {r.json()["error"] for r in responses} == {"invalid_review"}
    assert scorer.calls == []


@pytest.mark.parametrize("text", [*INVISIBLE_ONLY, "a\x00b", " 가 ", "\x1cx", "\u200b빵\u200b", "\x85"])
async def test_the_documented_pattern_and_the_server_agree(lab_client: LabClientFactory, text: str) -> None:
    """Clients validate against the published pattern: any text it accepts and the server refuses (or the reverse)
    is a 422 nobody could have foreseen."""
    async with lab_client(GatedScorer(gated=False)) as client:
        spec = (await client.get("/api/openapi.json")).json()
        accepted = (await client.post("/api/limited/predict", json={"text": text})).status_code == 200
    pattern = spec["components"]["schemas"]["ReviewIn"]["properties"]["text"]["pattern"]
    assert ecma_search(pattern, text) == accepted


@pytest.mark.parametrize("url", POSTS)
@pytest.mark.parametrize("number", ["NaN", "Infinity", "-Infinity", "1e400"])
async def test_non_finite_numbers_in_a_rejected_body_are_a_422(tmp_path: Path, url: str, number: str) -> None:
    """A 422 must never echo a value JSON cannot encode (NaN, infinity), or the error answer itself fails as a 500."""
    app = create_app(Settings(warmup=False, job_store=f"sqlite:///{tmp_path / 'jobs.db'}"), GatedScorer(gated=False))
    async with LifespanManager(app) as manager:
        transport = httpx.ASGITransport(app=manager.app, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://lab") as client:
            response = await client.post(url, content=f'{{"text": {number}, "x": [{number}]}}'.encode(), headers=JSON)
    assert response.status_code == 422, response.text
    assert response.json()["error"] == "invalid_request"


class EmptyRankingScorer(GatedScorer):
    """A model bug: a ranking with no topics (the answer cannot name a top topic)."""

    def score(self, texts: Sequence[str]) -> list[Ranking]:
        super().score(texts)
        return [[] for _ in texts]


async def test_a_500_is_counted_and_has_the_one_shape(tmp_path: Path) -> None:
    """An unexpected exception is answered inside the counting middleware, so review_requests_total counts the 500
    and its body keeps the one error shape."""
    app = create_app(
        Settings(warmup=False, job_store=f"sqlite:///{tmp_path / 'jobs.db'}"), EmptyRankingScorer(gated=False)
    )
    async with LifespanManager(app) as manager:
        transport = httpx.ASGITransport(app=manager.app, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://lab") as client:
            response = await client.post("/api/naive/predict", json={"text": "리뷰"})
            metrics = (await client.get("/metrics")).text
    assert response.status_code == 500
    assert response.json()["error"] == "internal"
    assert 'review_requests_total{path="naive",status="500"} 1.0' in metrics


async def test_webhook_url_is_declared_a_uri(lab_client: LabClientFactory) -> None:
    async with lab_client(GatedScorer(gated=False)) as client:
        spec = (await client.get("/api/openapi.json")).json()
    webhook = spec["components"]["schemas"]["JobIn"]["properties"]["webhook_url"]
    assert webhook["format"] == "uri"


@pytest.mark.slow
def test_over_real_http_the_server_stack_gives_clear_answers() -> None:
    """The same defects through uvicorn: a surrogate on ④, NaN, and OPTIONS on a ticket URL."""
    with live_server() as server, httpx.Client(base_url=server.url, timeout=30) as client:
        surrogate = client.post("/api/queue/jobs", content=LONE_SURROGATE, headers=JSON)
        nan = client.post("/api/limited/predict", content=b'{"text": NaN}', headers=JSON)
        job = client.post("/api/queue/jobs", json={"text": "좋아요"}).json()["job_id"]
        options = client.options(f"/api/queue/jobs/{job}")
        invisible = client.post("/api/naive/predict", content=json.dumps({"text": "\u200b\ufeff"}), headers=JSON)
        metrics = client.get("/metrics").text
    assert (surrogate.status_code, surrogate.json()["error"]) == (422, "invalid_review")
    assert (nan.status_code, nan.json()["error"]) == (422, "invalid_request")
    assert options.status_code == 405 and options.headers["Allow"] == "GET, DELETE"
    assert (invisible.status_code, invisible.json()["error"]) == (422, "invalid_review")
    assert 'status="500"' not in metrics
