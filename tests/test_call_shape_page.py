"""The page says which call shape the server chose, and the timings it chose from (app/engine/callshape.py)."""

from collections.abc import Iterator

import httpx
import pytest
from playwright.sync_api import Browser

from kit.live import LiveServer, live_server
from tests.browser import browser

pytestmark = [pytest.mark.browser, pytest.mark.slow]
__all__ = ["browser"]  # the module-scoped Chromium fixture (tests/browser.py)


@pytest.fixture(scope="module")
def server() -> Iterator[LiveServer]:
    with live_server() as running:
        yield running


def test_page_shows_the_measured_call_shape_and_why(browser: Browser, server: LiveServer) -> None:
    shape = httpx.get(f"{server.url}/api/model").json()["call_shape"]
    assert shape["source"] in ("measured", "cached")
    page = browser.new_page(locale="ko-KR")
    page.goto(f"{server.url}/")
    line = page.locator("#call-shape")
    line.wait_for(state="visible", timeout=30_000)
    text = line.inner_text()
    assert f"리뷰 하나는 {shape['one_review_shape']['chunk']}쌍씩" in text
    assert f"배치는 {shape['batch_shape']['chunk']}쌍씩" in text
    why = line.get_attribute("title") or ""
    assert len(why.splitlines()) == 1 + len(shape["trials"])  # one line per timed shape
    page.close()
