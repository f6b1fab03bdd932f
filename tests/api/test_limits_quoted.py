"""The page and the route docs quote the limits the box really runs with, not numbers typed twice."""

import re

from tests.conftest import LabClientFactory
from tests.fakes import GatedScorer


def words(html: str) -> str:
    """The page's text without tags: a quoted limit sits in a <span data-limit> the knobs keep live."""
    return re.sub(r"<[^>]+>", "", html)


CUSTOM = {"limited_seats": 2, "limited_max_wait_s": 9, "batch_window_s": 0.04, "batch_max": 6, "queue_max_jobs": 7}


async def test_the_page_quotes_the_default_limits(lab_client: LabClientFactory) -> None:
    async with lab_client(GatedScorer(gated=False)) as client:
        page = words((await client.get("/")).text)
    for quoted in ("대기석 4개", "15초 넘게", "최대 25ms 기다립니다(8개가 차면", "번호표가 20개를 넘으면"):
        assert quoted in page, quoted


async def test_the_page_and_the_docs_follow_the_settings(lab_client: LabClientFactory) -> None:
    async with lab_client(GatedScorer(gated=False), **CUSTOM) as client:
        page = words((await client.get("/")).text)
        spec = (await client.get("/api/openapi.json")).json()
    for quoted in ("대기석 2개", "9초 넘게", "최대 40ms 기다립니다(6개가 차면", "번호표가 7개를 넘으면"):
        assert quoted in page, quoted
    operations = spec["paths"]
    assert operations["/api/limited/predict"]["post"]["summary"] == "② limited: 1 in flight + 2 seats"
    assert "2 waiting seats" in operations["/api/limited/predict"]["post"]["description"]
    assert "(9 s)" in operations["/api/limited/predict"]["post"]["responses"]["503"]["description"]
    assert "40 ms (up to 6)" in operations["/api/batched/predict"]["post"]["description"]
    assert "over 7" in operations["/api/queue/jobs"]["post"]["responses"]["429"]["description"]
