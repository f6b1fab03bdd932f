"""The burst page while a burst runs: a live status panel, a phone layout, a comparison that keeps apart
what it compares. Real headless Chromium against a real server with the tiny model slowed to 1 s a review.

The box runs ③ with batches of at most 4 (LAB_BATCH_MAX=4, the default is 8). With 8, the six requests
the browser lets through fit in one batch and the other six wait inside the browser, not on the server:
measured on this box, ③'s server-side waiting count is above 0 for about 60 ms per burst, at the
hand-over between the two batches. With 4, two requests wait on the server for a whole batch (4 s),
which is what the panel must be able to show while all six connections are held.
"""

import re
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, WebSocketRoute

from app.paths.registry import PATHS
from kit.live import LiveServer, live_server, slowed
from tests.browser import browser
from tests.test_burst_page import SCREENSHOTS

pytestmark = [pytest.mark.browser, pytest.mark.slow]
__all__ = ["browser"]  # the module-scoped Chromium fixture (tests/browser.py)

SECONDS_PER_REVIEW = 1
BURST = 12
BROWSER_CONNECTIONS = 6
GUARD_MS = 90_000  # failure guards for waits, never delays

QUIET_SEATS = {"LAB_BATCH_MAX": "4", "LAB_LIMITED_HOLD_GRACE_S": "0"}
RUNNING = "document.getElementById('burst-status').dataset.state === 'running'"
HELD = f"document.querySelectorAll('#rows tbody tr.pending').length >= {BROWSER_CONNECTIONS}"
READ_CARDS = """() => [...document.querySelectorAll("#compare-cards .compare-card[data-key]")].map(
  (c) => ({key: c.dataset.key, text: c.innerText}))"""


@pytest.fixture(scope="module")
def server() -> Iterator[LiveServer]:
    # Held seats off: these tests fire bursts one after another on ②, and a refused request that never
    # comes back would hold its seat against the next burst (tests/test_burst_page_retry.py has them on).
    with live_server(**slowed(SECONDS_PER_REVIEW), **QUIET_SEATS) as running:
        yield running


@pytest.fixture(scope="module")
def quick_server() -> Iterator[LiveServer]:
    """For the layout, which needs every kind of row and not their times: a fifth of the review, no warm-up."""
    with live_server(**slowed(SECONDS_PER_REVIEW / 5, warm=False), **QUIET_SEATS) as running:
        yield running


def open_page(browser: Browser, server: LiveServer, width: int, height: int) -> tuple[Page, list[str]]:
    context = browser.new_context(viewport={"width": width, "height": height}, locale="ko-KR")
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(f"{server.url}/")
    page.wait_for_function("document.getElementById('box-panel').dataset.channel === 'websocket'")
    return page, errors


@pytest.fixture
def desk(browser: Browser, server: LiveServer) -> Iterator[Page]:
    page, errors = open_page(browser, server, 1366, 900)
    yield page
    page.context.close()
    assert not errors, f"JavaScript errors on the page: {errors}"


def fire(page: Page, path: str, size: int = BURST, mode: str = "distinct") -> None:
    page.check(f"input[name=path][value={path}]")
    page.check(f"input[name=mode][value={mode}]")
    page.fill("#burst-size", str(size))
    page.click("#fire")
    page.wait_for_selector(f"#rows[data-path={path}]")


def finish(page: Page) -> dict[str, Any]:
    """Waits for the burst to end; returns what the panel recorded during it."""
    page.wait_for_selector("#burst-status[data-state=done]", timeout=GUARD_MS)
    record: dict[str, Any] = page.evaluate("JSON.parse(document.getElementById('box-burst').dataset.record)")
    return record


def test_naive_burst_moves_the_memory_shown_while_it_runs(desk: Page) -> None:
    # First burst on a fresh server: six inferences at once allocate what one at a time did not. On the
    # tiny model that is a few MiB, so the panel's raw byte count is compared, not the rounded MiB.
    before = int(desk.get_attribute("#box-memory", "data-memory-bytes") or 0)
    fire(desk, "naive")
    desk.wait_for_function(
        f"{RUNNING} && Number(document.getElementById('box-memory').dataset.memoryBytes) !== {before}", timeout=GUARD_MS
    )
    record = finish(desk)
    assert record["peakMemoryBytes"] > record["memoryBeforeBytes"]
    assert record["peakInFlight"]["naive"] >= 2
    assert "최대 메모리" in desk.inner_text("#burst-box")


def test_panel_stays_live_during_a_batched_burst_that_holds_six_connections(desk: Page) -> None:
    fire(desk, "batched")
    # At one moment, before the burst ends and while six of its requests are held: the lane is busy,
    # ③ has work waiting on the server, and the values come over the socket, fresh.
    desk.wait_for_function(
        f"""{RUNNING} && {HELD}
        && document.getElementById('box-lane').dataset.busy === 'true'
        && Number(document.querySelector('#box-paths tr[data-path=batched]').dataset.waiting) > 0
        && document.getElementById('box-panel').dataset.channel === 'websocket'
        && document.getElementById('box-panel').dataset.stale === 'false'""",
        timeout=GUARD_MS,
    )
    # Pending rows count up instead of sitting blank.
    desk.wait_for_function(
        f"""{RUNNING} && [...document.querySelectorAll('#rows tbody tr.pending td.rt')]
            .some((td) => parseFloat(td.textContent) >= 1.0 && td.textContent.endsWith('초…'))""",
        timeout=GUARD_MS,
    )
    desk.screenshot(path=str(SCREENSHOTS / "live-batched-running.png"), full_page=True)
    record = finish(desk)
    assert record["channel"] == "websocket" and not record["lostSocket"]
    assert record["laneBusy"] and record["peakWaiting"]["batched"] > 0
    # The burst took about 12 s; the panel heard from the box throughout, never silent for a third of it.
    duration_ms = float(desk.evaluate("document.getElementById('rows').dataset.scaleMs"))
    assert record["updates"] >= 6
    assert record["maxGapMs"] < duration_ms / 3


def test_without_the_socket_the_panel_polls_and_says_its_values_are_stale(browser: Browser, server: LiveServer) -> None:
    context = browser.new_context(viewport={"width": 1366, "height": 900}, locale="ko-KR")
    page = context.new_page()

    def refuse(socket: WebSocketRoute) -> None:  # what a proxy without WebSocket support might do
        socket.close(code=1011, reason="no websockets here")

    page.route_web_socket(re.compile(r"/api/stats/live$"), refuse)
    try:
        page.goto(f"{server.url}/")
        page.wait_for_function("document.getElementById('box-panel').dataset.channel === 'polling'")
        page.wait_for_function("document.getElementById('box-panel').dataset.stale === 'false'")
        fire(page, "batched")
        # The polls queue behind the six held connections: the panel goes stale, and says so.
        page.wait_for_function(
            f"{RUNNING} && {HELD} && document.getElementById('box-panel').dataset.stale === 'true'", timeout=GUARD_MS
        )
        assert "오래됨" in page.inner_text("#box-updated")
        page.screenshot(path=str(SCREENSHOTS / "live-polling-stale.png"), full_page=True)
        record = finish(page)
        assert record["channel"] == "polling"
    finally:
        context.close()


def test_phone_layout_never_scrolls_sideways(browser: Browser, quick_server: LiveServer) -> None:
    page, errors = open_page(browser, quick_server, 390, 844)
    try:
        for path in (p.name for p in PATHS):
            fire(page, path, size=6)
            finish(page)
            width = page.evaluate("document.documentElement.scrollWidth")
            assert width <= 390, (path, width)
            # Nor inside the table: each row reflows into a card (tests/test_page_a11y_live.py checks its numbers).
            scroller = "document.querySelector('.table-scroll')"
            assert page.evaluate(f"{scroller}.scrollWidth - {scroller}.clientWidth") == 0, path
        page.screenshot(path=str(SCREENSHOTS / "phone-after-bursts.png"), full_page=True)
        assert page.evaluate("document.getElementById('weights-banner').getBoundingClientRect().height") < 40
    finally:
        page.context.close()
    assert not errors, f"JavaScript errors on the page: {errors}"


def test_comparison_keeps_distinct_and_same_review_bursts_apart(desk: Page) -> None:
    fire(desk, "limited")
    finish(desk)
    overload = {c["key"]: c["text"] for c in desk.evaluate(READ_CARDS)}["limited|distinct|12"]
    assert "② limited · 서로 다른 리뷰 · 12개" in overload and "200×5 429×7" in overload
    assert "포기한 것: 7/12개 요청" in overload
    fire(desk, "limited", mode="repeat")
    finish(desk)
    fire(desk, "limited", mode="repeat")  # the second time the cache answers all of them
    finish(desk)
    cards = {c["key"]: c["text"] for c in desk.evaluate(READ_CARDS)}
    assert cards["limited|distinct|12"] == overload  # the cache demo did not overwrite the overload burst
    assert "② limited · 같은 리뷰 반복 · 12개" in cards["limited|repeat|12"]
    assert "캐시가 12개를 추론 없이 답함" in cards["limited|repeat|12"]
    # Both on the one time axis, the overload burst's seven refusals visible as marks.
    strip = desk.locator('#compare-chart g.strip[data-key="limited|distinct|12"]')
    assert strip.locator("rect.refused-mark").count() == 7
    assert desk.locator('#compare-chart g.strip[data-key="limited|repeat|12"]').count() == 1
    desk.reload()
    desk.wait_for_selector('#compare-cards .compare-card[data-key="limited|distinct|12"]')
    after_reload = {c["key"]: c["text"] for c in desk.evaluate(READ_CARDS)}
    assert after_reload["limited|distinct|12"] == overload
    desk.screenshot(path=str(SCREENSHOTS / "live-compare.png"), full_page=True)
