"""Swagger UI in real headless Chromium with every request that would leave the box blocked.

The classroom box may have no internet: /api/docs must load, and "Try it out" must work, from
what the box serves. A request to any host other than the server's loopback address is aborted
and recorded, and the test asserts there were none.
"""

from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Browser, Route, expect

from kit.live import LiveServer, live_server
from tests.browser import browser

pytestmark = [pytest.mark.browser, pytest.mark.slow]
__all__ = ["browser"]  # the module-scoped Chromium fixture (tests/browser.py)

LOOPBACK = {"127.0.0.1", "localhost", "::1"}


@pytest.fixture(scope="module")
def server() -> Iterator[LiveServer]:
    with live_server() as running:
        yield running


def test_try_it_out_on_limited_predict_works_offline_and_shows_server_timing(
    browser: Browser, server: LiveServer
) -> None:
    context = browser.new_context(viewport={"width": 1400, "height": 1000}, locale="ko-KR")
    left_the_box: list[str] = []

    def only_loopback(route: Route) -> None:
        url = route.request.url
        if urlsplit(url).scheme in ("http", "https", "ws", "wss") and urlsplit(url).hostname not in LOOPBACK:
            left_the_box.append(url)
            route.abort("blockedbyclient")
        else:
            route.continue_()

    context.route("**/*", only_loopback)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        page.goto(f"{server.url}/api/docs")
        operation = page.locator(".opblock-post").filter(has_text="/api/limited/predict").first
        operation.locator(".opblock-summary").click()
        operation.get_by_role("button", name="Try it out").click()
        operation.get_by_role("button", name="Execute").click()
        live = operation.locator(".live-responses-table")
        expect(live.locator("tbody .response-col_status").first).to_have_text("200", timeout=30_000)
        headers = live.locator("tbody .response-col_description").first.inner_text().lower()
    finally:
        context.close()
    assert "server-timing:" in headers and "wait;dur=" in headers and "infer;dur=" in headers
    assert "x-cache:" in headers
    assert left_the_box == [], f"requests that tried to leave the box: {left_the_box}"
    assert not errors, f"JavaScript errors on /api/docs: {errors}"
