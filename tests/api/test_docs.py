"""Swagger UI and the favicon come from the box itself: nothing on /api/docs points off the box."""

import re

from tests.conftest import LabClientFactory
from tests.fakes import GatedScorer

ICO_MAGIC = b"\x00\x00\x01\x00"  # reserved 0, type 1 (icon)


async def test_swagger_ui_loads_its_assets_from_the_box(lab_client: LabClientFactory) -> None:
    async with lab_client(GatedScorer(gated=False)) as client:
        docs = await client.get("/api/docs")
        referenced = re.findall(r"""(?:src|href)=["']([^"']+)["']""", docs.text)
        assets = {url: await client.get(url) for url in referenced}
    assert docs.status_code == 200 and "SwaggerUIBundle" in docs.text
    assert "'/api/openapi.json'" in docs.text or '"/api/openapi.json"' in docs.text
    assert not re.search(r"https?://", docs.text.replace("http://lab", "")), "a URL off the box"
    local = {"/api/docs/assets/swagger-ui-bundle.js", "/api/docs/assets/swagger-ui.css", "/favicon.ico"}
    assert set(referenced) >= local
    assert all(answer.status_code == 200 and answer.content for answer in assets.values()), assets


async def test_favicon_answers_where_browsers_ask_and_the_page_links_it(lab_client: LabClientFactory) -> None:
    async with lab_client(GatedScorer(gated=False)) as client:
        icon = await client.get("/favicon.ico")
        page = await client.get("/")
        spec = (await client.get("/api/openapi.json")).json()
    assert icon.status_code == 200 and icon.headers["content-type"] == "image/x-icon"
    assert icon.content.startswith(ICO_MAGIC)
    assert '<link rel="icon" href="/favicon.ico">' in page.text
    assert "/favicon.ico" not in spec["paths"] and "/api/docs" not in spec["paths"]
