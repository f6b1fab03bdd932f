"""When the box has no live seat left, the page's socket is closed with 1013: the panel polls and says why."""

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser
from websockets.sync.client import connect

from kit.live import LiveServer, live_server
from tests.browser import browser

pytestmark = [pytest.mark.browser, pytest.mark.slow]
__all__ = ["browser"]
GUARD_MS = 30_000  # a failure guard, never a delay


@pytest.fixture(scope="module")
def server() -> Iterator[LiveServer]:
    with live_server(LAB_MAX_LIVE_CONNECTIONS="1") as running:
        yield running


def test_a_page_refused_a_live_seat_polls_and_says_the_box_is_full(browser: Browser, server: LiveServer) -> None:
    live_url = server.url.replace("http://", "ws://") + "/api/stats/live"
    with connect(live_url, open_timeout=30) as taken:  # another page holds the only live seat
        taken.recv(timeout=30)
        context = browser.new_context(viewport={"width": 1366, "height": 900}, locale="ko-KR")
        page = context.new_page()
        try:
            page.goto(f"{server.url}/")
            page.wait_for_function(
                "document.getElementById('box-panel').dataset.channel === 'polling'"
                " && document.getElementById('box-panel').dataset.full === 'true'"
                " && document.getElementById('box-panel').dataset.stale === 'false'",
                timeout=GUARD_MS,
            )
            assert "가득 차서(1013)" in page.inner_text("#box-age")
        finally:
            context.close()
