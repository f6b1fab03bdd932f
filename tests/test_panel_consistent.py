"""The status panel never contradicts itself, or the bars, while a burst runs: every render it draws is checked.

Real headless Chromium against a real server (the tiny model slowed to 0.5 s a review, burning CPU).
A MutationObserver keeps what each render of the panel showed at once: the CPU line, the waiting
total, ②'s seats and the rows' in-flight and waiting counts, so no moment between two looks can hide a
contradiction.
"""

import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, Page

from kit.live import LiveServer, live_server, slowed
from tests.browser import browser
from tests.test_burst_page_live import GUARD_MS, fire, open_page

pytestmark = [pytest.mark.browser, pytest.mark.slow]
__all__ = ["browser"]

WATCH = """() => {
  window.panelRenders = [];
  const read = () => ({
    cpu: document.getElementById('box-cpu').textContent,
    cpuInferences: Number(document.getElementById('box-cpu').dataset.inferences),
    waitingTotal: Number(document.getElementById('box-waiting').dataset.total),
    seats: document.getElementById('box-seats').textContent,
    held: Number(document.getElementById('box-seats').dataset.held),
    rows: [...document.querySelectorAll('#box-paths tr')].map((tr) => ({
      path: tr.dataset.path, inFlight: Number(tr.dataset.inFlight), waiting: Number(tr.dataset.waiting)})),
  });
  new MutationObserver(() => window.panelRenders.push(read()))
    .observe(document.getElementById('box-paths'), {childList: true});
}"""


@pytest.fixture(scope="module")
def server() -> Iterator[LiveServer]:
    with live_server(**slowed(0.5), LAB_BATCH_MAX="4") as running:
        yield running


@pytest.fixture
def desk(browser: Browser, server: LiveServer) -> Iterator[Page]:
    page, errors = open_page(browser, server, 1366, 900)
    page.evaluate(WATCH)
    yield page
    page.context.close()
    assert not errors, f"JavaScript errors on the page: {errors}"


def renders(page: Page) -> list[dict[str, Any]]:
    seen: list[dict[str, Any]] = page.evaluate("window.panelRenders")
    return seen


def in_flight(render: dict[str, Any], path: str) -> int:
    return next(int(r["inFlight"]) for r in render["rows"] if r["path"] == path)


def test_during_a_naive_burst_the_panel_never_calls_the_cpu_idle(desk: Page) -> None:
    fire(desk, "naive")
    desk.wait_for_selector("#burst-status[data-state=done]", timeout=GUARD_MS)
    busy = [r for r in renders(desk) if in_flight(r, "naive") > 0]
    assert busy, "the panel never showed ① in flight: the check would prove nothing"
    # ① bypasses the lane, so the lane line may say 쉬는 중; the CPU line never may.
    assert all(r["cpuInferences"] >= in_flight(r, "naive") and r["cpu"] != "쉬는 중" for r in busy)


def test_during_a_mixed_burst_the_waiting_total_is_the_sum_of_the_rows(desk: Page, server: LiveServer) -> None:
    def burst(route: str, n: int) -> None:
        with httpx.Client(base_url=server.url, timeout=120) as client:
            threads = [
                threading.Thread(target=client.post, args=(route,), kwargs={"json": {"text": f"섞인 리뷰 {route} {i}"}})
                for i in range(n)
            ]
            for t in threads:
                t.start()
            for t in threads:
                t.join()

    routes = ["/api/limited/predict", "/api/batched/predict", "/api/queue/jobs"]
    firing = [threading.Thread(target=burst, args=(route, 8)) for route in routes]
    for t in firing:
        t.start()
    desk.wait_for_function(
        "window.panelRenders.some((r) => r.rows.filter((row) => row.waiting > 0).length >= 2)", timeout=GUARD_MS
    )
    for t in firing:
        t.join(timeout=GUARD_MS / 1000)
    seen = renders(desk)
    assert all(r["waitingTotal"] == sum(int(row["waiting"]) for row in r["rows"]) for r in seen)
    assert max(r["waitingTotal"] for r in seen) > 0


def test_during_a_limited_burst_the_panel_names_the_held_seats_beside_the_taken_ones(desk: Page) -> None:
    """A 429 box_full while seats look free is a seat kept for a returner: the panel says how many."""
    fire(desk, "limited")
    desk.wait_for_selector("#burst-status[data-state=done]", timeout=GUARD_MS)
    statuses = desk.eval_on_selector_all("#rows tbody tr", "rows => rows.map((tr) => tr.dataset.status)")
    assert "429" in statuses  # refusals with a Seat-Hold each: there were holds to show
    seen = renders(desk)
    held = [r for r in seen if r["held"] > 0]
    assert held, "the panel never showed a held seat: the check would prove nothing"
    assert all(("맡아 둔 자리" in r["seats"]) == (r["held"] > 0) for r in seen)
    assert all(f"· 맡아 둔 자리 {r['held']} " in r["seats"] for r in held)
