"""The burst page for everyone: axe-core finds nothing serious or critical on desktop and at 390 px, idle, during
and after a burst; on a phone each row's numbers are on screen; the table and the cards are reachable by keyboard.

axe-core comes from npm (package.json; `just setup` runs `npm ci`) and is injected into the page by the test.
"""

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, Route

from app.paths.registry import PATHS
from bench.adaptive_curve import curve
from kit.live import ROOT, LiveServer, live_server
from tests.browser import browser
from tests.test_burst_page_live import GUARD_MS, finish, fire

pytestmark = [pytest.mark.browser, pytest.mark.slow]
__all__ = ["browser"]  # the module-scoped Chromium fixture (tests/browser.py)

AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"
SERIOUS = ("serious", "critical")
LABELS = {p.name: p.label for p in PATHS}
VIEWPORTS = {"desktop": (1366, 900), "phone": (390, 844)}
RUN_AXE = """async () => {
  const result = await axe.run(document, {resultTypes: ["violations"]});
  return result.violations.map((v) => ({id: v.id, impact: v.impact, nodes: v.nodes.map((n) => n.target.join(" "))}));
}"""


@pytest.fixture(scope="module")
def server() -> Iterator[LiveServer]:
    with live_server() as running:
        yield running


def axe_path() -> Path:
    if not AXE.exists():
        if os.environ.get("CI"):
            pytest.fail(f"{AXE} is missing in CI: `just setup` runs npm ci")
        pytest.skip(f"{AXE} is missing (npm ci)")
    return AXE


def open_page(browser: Browser, server: LiveServer, viewport: str, curve: dict[str, Any] | None = None) -> Page:
    """The page at `viewport`; `curve`: served in place of the committed static/adaptive-curve.json."""
    width, height = VIEWPORTS[viewport]
    page = browser.new_context(viewport={"width": width, "height": height}, locale="ko-KR").new_page()
    if curve is not None:
        body = json.dumps(curve, ensure_ascii=False)
        page.route(
            "**/static/adaptive-curve.json", lambda route: route.fulfill(body=body, content_type="application/json")
        )
    page.goto(f"{server.url}/")
    page.wait_for_function("document.getElementById('box-panel').dataset.channel === 'websocket'")
    page.add_script_tag(path=str(axe_path()))
    return page


def serious(page: Page) -> list[dict[str, Any]]:
    return [v for v in page.evaluate(RUN_AXE) if v["impact"] in SERIOUS]


class Held:
    """Holds the burst's requests in the browser until released: the page stays mid-burst as long as the test needs."""

    def __init__(self) -> None:
        self.routes: list[Route] = []
        self.released = False

    def __call__(self, route: Route) -> None:
        if self.released:
            route.continue_()
        else:
            self.routes.append(route)

    def release(self) -> None:
        self.released = True
        for route in self.routes:
            route.continue_()


@pytest.mark.parametrize("viewport", list(VIEWPORTS))
def test_axe_finds_nothing_serious_idle_during_and_after_a_burst(
    browser: Browser, server: LiveServer, viewport: str
) -> None:
    page = open_page(browser, server, viewport)
    assert serious(page) == []
    held = Held()
    page.route("**/api/limited/predict**", held)
    fire(page, "limited", 12)
    page.wait_for_selector("#burst-status[data-state=running]", timeout=GUARD_MS)
    assert serious(page) == []
    held.release()
    finish(page)
    assert serious(page) == []
    page.context.close()


ROW_NUMBERS_ON_SCREEN = """() => {
  const width = document.documentElement.clientWidth;
  const scroller = document.querySelector('.table-scroll');
  const off = [];
  for (const tr of document.querySelectorAll('#rows tbody tr')) {
    for (const cls of ['status', 'wait', 'infer', 'rt']) {
      const r = tr.querySelector('td.' + cls).getBoundingClientRect();
      if (r.width === 0 || r.left < 0 || r.right > width) off.push(tr.dataset.index + ' ' + cls);
    }
  }
  return {off, sideways: scroller.scrollWidth - scroller.clientWidth};
}"""


def test_at_390_px_each_rows_status_and_times_are_on_screen(browser: Browser, server: LiveServer) -> None:
    page = open_page(browser, server, "phone")
    fire(page, "limited", 12)
    finish(page)
    assert page.evaluate(ROW_NUMBERS_ON_SCREEN) == {"off": [], "sideways": 0}
    page.context.close()


def focus_by_tab(page: Page, selector: str, limit: int = 80) -> None:
    """Press Tab until `selector` has the focus (a failure guard of `limit` presses, never a delay)."""
    for _ in range(limit):
        page.keyboard.press("Tab")
        if page.evaluate(f"document.activeElement.matches({selector!r})"):
            return
    raise AssertionError(f"{selector} is not reachable with Tab")


def test_the_table_and_the_comparison_cards_are_reachable_and_usable_by_keyboard(
    browser: Browser, server: LiveServer
) -> None:
    page = open_page(browser, server, "desktop")
    fire(page, "limited", 4)
    finish(page)
    fire(page, "naive", 2)
    finish(page)
    focus_by_tab(page, ".table-scroll")
    focus_by_tab(page, ".compare-card[data-path=limited]")
    page.keyboard.press("Enter")
    page.wait_for_selector("#rows[data-path=limited]", timeout=GUARD_MS)
    page.context.close()


READ_COST_CURVE = """() => {
  const figure = document.getElementById("adaptive-curve");
  const point = (p) => ({path: p.dataset.path, multiple: Number(p.dataset.multiple), value: Number(p.dataset.value)});
  const panels = Object.fromEntries([...figure.querySelectorAll("svg.curve-svg")]
    .map((svg) => [svg.dataset.panel, [...svg.querySelectorAll(".point")].map(point)]));
  const tables = [...figure.querySelectorAll("table")].map((t) => ({share: Number(t.dataset.longShare),
    heads: [...t.querySelectorAll("thead th")].map((th) => th.textContent), rows: t.querySelectorAll("tbody tr").length,
    first: [...t.querySelectorAll("tbody tr:first-child > *")].map((c) => c.textContent)}));
  return {panels, tables, legend: [...figure.querySelectorAll(".curve-legend li")].map((li) => li.textContent.trim()),
          answer: figure.querySelector(".curve-answer").textContent, width: figure.getBoundingClientRect().width,
          page: document.documentElement.clientWidth, measured: figure.querySelector(".curve-measured").textContent};
}"""


def curve_in_work() -> dict[str, Any]:
    """A curve as `bench.adaptive` now writes it: served work, lengths, late answers, and a long mix beside."""
    date, host = "2026-12-06T09:00:00+00:00", "vm (2 CPUs, 24 GiB, x86_64, no GPU) (AMD EPYC), lab pinned to core 1"
    rows = [
        {
            "date": date,
            "host": host,
            "path": path,
            "multiple": multiple,
            "duration_s": 60.0,
            "client_timeout_s": 30.0,
            "run": 1,
            "capacity_per_s": 1.1 if share == 0 else 0.55,
            "one_review_s": 0.9 if share == 0 else 1.8,
            "long_share": share,
            "long_chars": 2000,
            "cost_fit": {"samples": 27},
            "counts": {"ok": 50, "rejected_429": 50},
            "served_vs_capacity": 1.5 if path == "adaptive" else 1.2,
            "served_work": 0.85 if path == "adaptive" else 0.98,
            "offered_mean_chars": 61.0,
            "served_mean_chars": 38.6 if path == "adaptive" else 65.6,
            "p95_served_s": 2.0,
            "p99_refused_s": 0.01,
            "late": 0 if path == "adaptive" else None,
        }
        for share in (0.0, 0.1)
        for path in ("limited", "adaptive")
        for multiple in (0.5, 2.0, 5.0)
    ]
    return curve(rows, [])


@pytest.mark.parametrize("viewport", list(VIEWPORTS))
def test_the_cost_curve_draws_the_committed_medians_and_is_axe_clean(
    browser: Browser, server: LiveServer, viewport: str
) -> None:
    data = json.loads((ROOT / "static" / "adaptive-curve.json").read_text(encoding="utf-8"))
    page = open_page(browser, server, viewport)
    page.check("input[name=path][value=adaptive]")  # ⑤'s note holds the figure
    page.wait_for_selector("#adaptive-curve[data-state=drawn]", timeout=GUARD_MS)
    page.click("#adaptive-curve summary")  # the table of numbers, opened
    drawn = page.evaluate(READ_COST_CURVE)
    peers = data.get("peers", {}).get("streams", [])  # Infinity and LitServe, drawn after the lab's paths
    points = [*data["streams"], *peers]
    assert drawn["panels"]["served"] == [
        {"path": p["path"], "multiple": p["multiple"], "value": p["served_vs_capacity"]} for p in points
    ]
    assert drawn["panels"]["p95"] == [
        {"path": p["path"], "multiple": p["multiple"], "value": p["p95_reviews"]}
        for p in points
        if p["p95_reviews"] is not None
    ]
    drawn_work = any(p.get("served_work") is not None for p in data["streams"])
    assert ("work" in drawn["panels"]) == ("length" in drawn["panels"]) == drawn_work  # a curve from before: 2 panels
    labels = {p["path"]: p.get("label") or LABELS[p["path"]] for p in points}
    assert drawn["legend"] == list(labels.values())
    assert drawn["answer"].startswith(f"{max(p['multiple'] for p in points):g}배가 몰리면")
    assert all(label in drawn["answer"] for label in labels.values())
    assert drawn["width"] <= drawn["page"]  # fits a phone
    rows = [len(data["streams"]) + len(peers)] + [len(m["streams"]) for m in data.get("long_mixes", [])]
    assert [t["rows"] for t in drawn["tables"]] == rows
    assert serious(page) == []
    page.context.close()


@pytest.mark.parametrize("viewport", list(VIEWPORTS))
def test_the_cost_curve_draws_work_and_length_beside_count_and_tabulates_a_long_mix(
    browser: Browser, server: LiveServer, viewport: str
) -> None:
    data = curve_in_work()
    page = open_page(browser, server, viewport, curve=data)
    page.check("input[name=path][value=adaptive]")
    page.wait_for_selector("#adaptive-curve[data-state=drawn]", timeout=GUARD_MS)
    page.click("#adaptive-curve summary")
    drawn = page.evaluate(READ_COST_CURVE)
    assert list(drawn["panels"]) == ["served", "work", "p95", "length"]
    assert drawn["panels"]["work"] == [
        {"path": p["path"], "multiple": p["multiple"], "value": p["served_work"]} for p in data["streams"]
    ]
    adaptive_length = [p["value"] for p in drawn["panels"]["length"] if p["path"] == "adaptive"]
    assert adaptive_length == [pytest.approx(38.6 / 61.0)] * 3  # served ÷ offered mean length, at each load
    assert "건수로 1.5배, 일로 0.85배를 처리했고(답한 리뷰 평균 39자, 보낸 리뷰 평균 61자)" in drawn["answer"]
    main, long = drawn["tables"]
    assert (main["share"], long["share"]) == (0, 0.1)
    assert main["heads"] == [
        "경로",
        "몰린 양",
        "건수 ÷ 하나씩",
        "일 ÷ 하나씩",
        "평균 길이: 답함 / 보냄",
        "95%가 답을 받은 시간 ÷ 리뷰 한 건",
        "바로 거절",
        "30초에 포기",
        "약속보다 늦은 답 (모든 회)",
    ]
    assert main["first"] == ["② limited", "0.5×", "1.2배", "0.98배", "66자 / 61자", "2.2배", "50%", "0%", "–"]
    assert main["rows"] == long["rows"] == 6
    assert "하나씩 잰 27건으로 토큰 수에 맞춘 식" in drawn["measured"]
    assert drawn["width"] <= drawn["page"]
    assert serious(page) == []
    page.context.close()
