"""Small hardening items in-process: invisible text by Unicode's property, no redirect naming the client's
Host, capped validation answers, strict numbers."""

import pytest

from app.contract.schema import VISIBLE_PATTERN
from tests.api.test_hardening import POSTS, ecma_search
from tests.conftest import LabClientFactory
from tests.fakes import GatedScorer

# Default_Ignorable code points outside main's hand list, as the probe sent them.
DEFAULT_IGNORABLE_ONLY = [
    "\u034f\u034f",  # combining grapheme joiner
    "\u17b4\u17b5",  # Khmer inherent vowels
    "\u180b\u180f",  # Mongolian free variation selectors
    "\ufe00\ufe0f",  # variation selectors
    "\ufff0\ufff8",  # unassigned, default ignorable
    "\U000e0041\U000e0042",  # tag letters
    "\U0001d173",  # musical symbol begin beam
    "\U0001bca0",  # shorthand format letter overlap
    "\U000e0100",  # variation selector 17
]


@pytest.mark.parametrize("text", DEFAULT_IGNORABLE_ONLY)
async def test_default_ignorable_only_text_never_reaches_the_model(lab_client: LabClientFactory, text: str) -> None:
    scorer = GatedScorer(gated=False)
    async with lab_client(scorer) as client:
        responses = [await client.post(url, json={"text": text}) for url in POSTS]
    assert [r.status_code for r in responses] == [422] * 4
    assert {r.json()["error"] for r in responses} == {"invalid_review"}
    assert scorer.calls == []


@pytest.mark.parametrize("text", ["가\u034f", "\ufe0f😀", "a\U000e0041", "\u2800x"])
async def test_a_visible_character_beside_them_is_accepted(lab_client: LabClientFactory, text: str) -> None:
    async with lab_client(GatedScorer(gated=False)) as client:
        assert (await client.post("/api/limited/predict", json={"text": text})).status_code == 200


@pytest.mark.parametrize("text", [t for t in DEFAULT_IGNORABLE_ONLY if all(ord(c) < 0x10000 for c in t)])
def test_the_documented_pattern_refuses_the_same_bmp_characters(text: str) -> None:
    assert not ecma_search(VISIBLE_PATTERN, text)


@pytest.mark.parametrize("method", ["POST", "GET"])
async def test_a_trailing_slash_is_a_404_without_any_location(lab_client: LabClientFactory, method: str) -> None:
    """A redirect to the trailing-slash-free route would be built from the client's own Host header, so a forged Host
    could send a student anywhere: the lab answers 404 and names no location."""
    async with lab_client(GatedScorer(gated=False)) as client:
        response = await client.request(
            method, "/api/limited/predict/", json={"text": "빵"}, headers={"host": "evil.example"}
        )
    assert response.status_code == 404 and "location" not in response.headers
    assert response.json()["error"] == "not_found"


async def test_a_validation_answer_is_capped(lab_client: LabClientFactory) -> None:
    """A 422 lists each problem, so a small body full of unknown keys must not buy an answer many times its size."""
    body = {"text": "빵", **{f"k{i}": 1 for i in range(1500)}}
    async with lab_client(GatedScorer(gated=False)) as client:
        response = await client.post("/api/limited/predict", json=body)
    assert response.status_code == 422
    assert len(response.content) < 4096, len(response.content)
    answer = response.json()
    assert len(answer["fields"]) == 10 and "1500 problems" in answer["detail"]


async def test_a_long_unknown_key_is_not_echoed_whole(lab_client: LabClientFactory) -> None:
    async with lab_client(GatedScorer(gated=False)) as client:
        response = await client.post("/api/limited/predict", json={"text": "빵", "k" * 10_000: 1})
    assert response.status_code == 422 and len(response.content) < 1024


@pytest.mark.parametrize("value", ["10", True, "ten", [10]])
async def test_max_time_in_queue_is_strict_like_text(lab_client: LabClientFactory, value: object) -> None:
    async with lab_client(GatedScorer(gated=False)) as client:
        response = await client.post("/api/queue/jobs", json={"text": "빵", "max_time_in_queue_s": value})
    assert response.status_code == 422 and response.json()["error"] == "invalid_request"


@pytest.mark.parametrize("value", [10, 10.5])
async def test_max_time_in_queue_takes_numbers(lab_client: LabClientFactory, value: float) -> None:
    async with lab_client(GatedScorer(gated=False)) as client:
        response = await client.post("/api/queue/jobs", json={"text": "빵", "max_time_in_queue_s": value})
    assert response.status_code == 202
