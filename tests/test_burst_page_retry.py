"""The page's "거절되면 다시 오기" toggle: refused requests come back with their held seat, every try on one bar.

Real headless Chromium against a real server with the tiny model slowed to 0.3 s a review.
"""

from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import Browser, Page

from kit.live import LiveServer, live_server, slowed
from tests.browser import browser, watched_page

pytestmark = [pytest.mark.browser, pytest.mark.slow]
__all__ = ["browser"]

GUARD_MS = 120_000  # a failure guard, never a delay

READ_ROWS = """() => [...document.querySelectorAll("#rows tbody tr")].map((tr) => ({
  status: tr.dataset.status, attempts: tr.dataset.attempts, hold: tr.dataset.hold || null,
  segs: [...tr.querySelectorAll(".seg")].map((s) => s.className.replace("seg seg-", "")),
  text: tr.querySelector("td.status").innerText}))"""


@pytest.fixture(scope="module")
def server() -> Iterator[LiveServer]:
    with live_server(**slowed(0.3)) as running:
        yield running


@pytest.fixture
def page(browser: Browser, server: LiveServer) -> Iterator[Page]:
    with watched_page(browser, f"{server.url}/", 1366, 900) as opened:
        yield opened


def test_refused_students_come_back_and_every_try_is_on_their_bar(page: Page) -> None:
    page.check("input[name=path][value=limited]")
    page.fill("#burst-size", "12")
    page.check("#retry")
    page.click("#fire")
    page.wait_for_selector("#rows[data-path=limited]")
    page.wait_for_selector("#burst-status[data-state=done]", timeout=GUARD_MS)
    rows: list[dict[str, Any]] = page.evaluate(READ_ROWS)
    assert len(rows) == 12
    # Everyone is served in the end, or has used all four tries and says what the last one got.
    assert all(r["status"] == "200" or len(r["attempts"].split(",")) == 4 for r in rows), rows
    came_back = [r for r in rows if len(r["attempts"].split(",")) > 1]
    assert came_back, "a burst of 12 at 1 + 4 seats refuses someone"
    for row in came_back:
        tries = row["attempts"].split(",")
        assert tries[0] in ("429", "503")
        assert row["segs"][:2] == ["refused", "outside"], row  # the refusal and the wait outside, on the same bar
        assert f"시도 {len(tries)}번" in row["text"]
    assert any(r["hold"] == "seated" for r in came_back)  # a held seat was claimed
    summary = page.inner_text("#summary")
    for words in ("마지막 학생 처리까지", "학생당 시도", "첫 재방문에 자리"):
        assert words in summary
    card = page.locator("#compare-cards .compare-card[data-retry=true]")
    assert "거절되면 다시 오기" in card.inner_text()


def test_the_limited_note_explains_the_held_seat_in_korean(page: Page) -> None:
    page.check("input[name=path][value=limited]")
    note = page.inner_text("[data-path-note=limited]")
    assert "자리 맡아 두기" in note and "예약" in note and "3초" in note
    legend = page.inner_text(".legend")
    assert "거절된 시도" in legend and "밖에서 기다림" in legend
