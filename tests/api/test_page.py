"""The burst page's HTML, its static files and the sample reviews it fires, served in-process."""

import json

from app.settings import Settings
from tests.conftest import LabClientFactory
from tests.fakes import GatedScorer


async def test_page_links_its_assets_and_the_api(lab_client: LabClientFactory) -> None:
    async with lab_client(GatedScorer(gated=False)) as client:
        page = await client.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    html = page.text
    for needed in ("/static/burst.js", "/static/box.js", "/static/burst.css", "/api/docs", "/api/stats", "/metrics"):
        assert needed in html
    assert "발사" in html and "브라우저 대기" in html
    # Students copy this line from the page; it must name the box they are looking at.
    assert "curl -O http://lab/static/burst.py && python3 burst.py http://lab 50" in html


async def test_static_assets_are_served_without_a_build_step(lab_client: LabClientFactory) -> None:
    async with lab_client(GatedScorer(gated=False)) as client:
        script = await client.get("/static/burst.js")
        cli = await client.get("/static/burst.py")
        missing = await client.get("/static/nothing-here.js")
    assert script.status_code == 200 and "function followTicket" in script.text
    assert cli.status_code == 200 and "def fire_burst" in cli.text
    assert missing.status_code == 404


async def test_samples_are_the_shipped_reviews(lab_client: LabClientFactory) -> None:
    shipped = json.loads(Settings().samples_file.read_text(encoding="utf-8"))
    async with lab_client(GatedScorer(gated=False)) as client:
        samples = (await client.get("/api/samples")).json()
    assert samples == shipped
    assert len({s["text"] for s in samples}) == len(samples)
