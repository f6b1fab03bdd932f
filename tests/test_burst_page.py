"""The burst page in real headless Chromium against a real server with the tiny model.

The server pads every inference to SECONDS_PER_REVIEW, so queueing and 429s are real. The
browser opens at most six connections to one server, and these tests assert what that does
(rather than what an ideal simultaneous burst would do): see `burst.py` for the latter.
"""

import json
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, Request, Route

from app.paths.registry import PATHS
from kit.live import ROOT, LiveServer, live_server, slowed
from tests.api.test_page import LATIN_SENTENCE
from tests.browser import browser, watched_page

pytestmark = [pytest.mark.browser, pytest.mark.slow]
__all__ = ["browser"]  # the module-scoped Chromium fixture (tests/browser.py)

SCREENSHOTS = ROOT / "artifacts" / "screenshots"
SECONDS_PER_REVIEW = 0.5
BURST = 12
BROWSER_CONNECTIONS = 6  # Chromium's HTTP/1.1 limit per host
EVENTS_STREAM = re.compile(r"/api/queue/events\?")

# Every row's dataset, plus the rendered width of its track and of each bar segment.
READ_ROWS = """() => {
  const table = document.getElementById("rows");
  return [...table.tBodies[0].rows].map((tr) => {
    const px = (kind) => {
      const seg = tr.querySelector(".seg-" + kind);
      return seg ? seg.getBoundingClientRect().width : 0;
    };
    return {
      ...tr.dataset,
      scaleMs: Number(table.dataset.scaleMs),
      trackPx: tr.querySelector(".track").getBoundingClientRect().width,
      browserPx: px("browser"), ticketPx: px("ticket"), waitPx: px("wait"), inferPx: px("infer"), otherPx: px("other"),
      shown: tr.innerText,
    };
  });
}"""

Row = dict[str, Any]


@pytest.fixture(scope="module")
def server() -> Iterator[LiveServer]:
    with live_server(**slowed(SECONDS_PER_REVIEW)) as running:
        yield running


@pytest.fixture(scope="module")
def page(browser: Browser, server: LiveServer) -> Iterator[Page]:
    with watched_page(browser, f"{server.url}/", 1400, 1000) as opened:
        yield opened


@pytest.fixture(scope="module")
def burst_requests() -> dict[str, list[str]]:
    """Method and URL of every request the page made during each path's burst (filled by `fire`)."""
    return {}


@pytest.fixture(scope="module")
def burst_texts() -> dict[str, list[str]]:
    """The review text of every POST the page sent during each path's burst (filled by `fire`)."""
    return {}


@pytest.fixture(scope="module")
def fire(
    page: Page, burst_requests: dict[str, list[str]], burst_texts: dict[str, list[str]]
) -> Callable[..., list[Row]]:
    """Fire one burst per path at most once per module and return its rows (and a screenshot).

    `while_running` is a JS condition that must hold at some moment before the burst ends.
    """
    fired: dict[str, list[Row]] = {}

    def fire_path(path: str, while_running: str | None = None) -> list[Row]:
        if path not in fired:
            seen: list[str] = []

            def record(request: Request) -> None:
                seen.append(f"{request.method} {request.url}")
                if request.method == "POST":
                    burst_texts.setdefault(path, []).append(json.loads(request.post_data or "{}").get("text", ""))

            page.on("request", record)
            try:
                fired[path] = fire_burst(page, path, BURST, while_running)
            finally:
                page.remove_listener("request", record)
            burst_requests[path] = seen
        return fired[path]

    return fire_path


def fire_burst(
    page: Page, path: str, size: int, while_running: str | None = None, *, shot: str | None = None
) -> list[Row]:
    """Fire a burst of `size` distinct reviews at `path`, wait until it is done, screenshot it, read its rows."""
    page.check(f"input[name=path][value={path}]")
    page.check("input[name=mode][value=distinct]")
    page.fill("#burst-size", str(size))
    page.click("#fire")
    page.wait_for_selector(f"#rows[data-path={path}]")
    if while_running is not None:
        page.wait_for_function(while_running, timeout=60_000)
    page.wait_for_selector("#burst-status[data-state=done]", timeout=90_000)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{shot or f'burst-{path}'}.png"), full_page=True)
    rows: list[Row] = page.evaluate(READ_ROWS)
    return rows


def ticket_polls(requests: list[str]) -> list[str]:
    """GETs of one ticket's status (not its events): what the page sends when it polls."""
    return [r for r in requests if re.match(r"GET \S+/api/queue/jobs/[0-9a-f]+(\?|$)", r)]


def ticket_streams(requests: list[str]) -> list[str]:
    return [r for r in requests if "/events" in r]


def statuses(rows: list[Row]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for row in rows:
        counts[row["status"]] = counts.get(row["status"], 0) + 1
    return counts


def assert_bars_follow_server_timing(rows: list[Row]) -> None:
    """Each segment's share of the track is its Server-Timing value's share of the slowest request."""
    assert all(row["state"] == "done" for row in rows)
    scale = rows[0]["scaleMs"]
    assert scale == pytest.approx(max(float(row["totalMs"]) for row in rows), abs=0.1)
    checked = 0
    for row in rows:
        one_px = 1.5 / row["trackPx"]  # sub-pixel rounding, as a share of the track
        for kind, key in (("wait", "waitMs"), ("infer", "inferMs"), ("browser", "browserMs")):
            if key in row:
                assert row[f"{kind}Px"] / row["trackPx"] == pytest.approx(float(row[key]) / scale, abs=one_px), row
                checked += 1
        if float(row["totalMs"]) == pytest.approx(scale, abs=0.1):  # the slowest request fills its track
            drawn = sum(row[f"{kind}Px"] for kind in ("browser", "ticket", "wait", "infer", "other"))
            assert drawn == pytest.approx(row["trackPx"], abs=2), row
    assert checked >= len(rows)


def test_page_shows_random_weights_banner_live_box_and_links(page: Page) -> None:
    page.wait_for_selector("#weights-banner", state="visible")  # shown once /api/model has answered
    assert "의미 없음" in page.inner_text("#weights-banner")
    page.wait_for_function("document.getElementById('box-updated').textContent === '실시간'")
    assert "MiB" in page.inner_text("#box-memory")
    assert page.inner_text("#box-seats").startswith("0 / 5")
    hrefs = page.eval_on_selector_all("header a", "links => links.map((a) => a.getAttribute('href'))")
    assert {"/api/docs", "/api/stats", "/metrics"} <= set(hrefs)


def test_the_page_says_its_model_title_and_figures_provenance_in_korean(page: Page) -> None:
    """The English records stay on /api/model and in the JSON files: the model line names the model once (no
    "(random)" after the manifest's own note), the title names five paths, and ⑤'s figure says when in UTC and
    on what with the CPU's brand as written, never transliterated."""
    page.wait_for_function("document.getElementById('box-model').textContent.startsWith('모델:')")
    line = page.inner_text("#box-model")
    assert "무작위 가중치" in line and "(random" not in line and LATIN_SENTENCE.findall(line) == [], line
    assert "다섯 가지 방법" in page.inner_text("h1")
    page.check("input[name=path][value=adaptive]")  # ⑤'s note holds the figure
    page.wait_for_selector("#adaptive-curve[data-state=drawn]")
    provenance = page.inner_text("#adaptive-curve .curve-measured")
    assert "UTC" in provenance and "AMD EPYC" in provenance, provenance
    assert "협정 세계시" not in provenance and "에이엠디" not in provenance, provenance


def test_naive_serves_all_but_the_browser_lets_only_six_through(fire: Callable[..., list[Row]]) -> None:
    rows = fire("naive")
    assert statuses(rows) == {"200": BURST}
    # Every inference takes at least SECONDS_PER_REVIEW, so a request that had to wait for one of the
    # six connections waited at least that long inside the browser; it shows as its own segment.
    queued_in_browser = [r for r in rows if float(r["browserMs"]) >= 0.9 * SECONDS_PER_REVIEW * 1000]
    assert len(queued_in_browser) >= BURST - BROWSER_CONNECTIONS, [r["browserMs"] for r in rows]
    assert_bars_follow_server_timing(rows)


def test_the_pages_first_burst_sends_the_first_samples_as_burst_py_does(
    fire: Callable[..., list[Row]], burst_texts: dict[str, list[str]]
) -> None:
    """The same crowd from the page and from `just burst`: the first burst of n is samples 1..n (tagged)."""
    fire("naive")  # the module's first burst
    samples = [s["text"] for s in json.loads((ROOT / "app" / "data" / "sample_reviews.json").read_text("utf-8"))]
    sent = sorted(burst_texts["naive"], key=lambda text: int(text.rsplit("-", 1)[1]))
    assert [text.rsplit(" #", 1)[0] for text in sent] == samples[:BURST]


def test_limited_admits_five_and_refuses_the_rest_with_retry_after(fire: Callable[..., list[Row]]) -> None:
    rows = fire("limited")
    # Six requests reach the box first: 1 in flight + 4 seats are admitted, the sixth is refused. Each
    # refusal frees its connection within milliseconds, so the other six also arrive while every seat is
    # taken (the first inference alone takes SECONDS_PER_REVIEW): 5 x 200 and 7 x 429, as without the limit.
    assert statuses(rows) == {"200": 5, "429": 7}, [(r["status"], r.get("browserMs")) for r in rows]
    refused = [r for r in rows if r["status"] == "429"]
    assert all(int(r["retryAfter"]) >= 1 for r in refused)
    assert all("box_full" in r["shown"] and "초 뒤 다시" in r["shown"] for r in refused)
    served = sorted((r for r in rows if r["status"] == "200"), key=lambda r: float(r["waitMs"]))
    # The last seat waited for the three whole inferences seated ahead of it (the lane's own times, which
    # a short review keeps under SECONDS_PER_REVIEW) and part of the one running when it came (how much of
    # that one depends on when the browser let it through: not a number to claim). 1 ms a term: rounding.
    ahead = sum(float(r["inferMs"]) for r in served[1:4])
    assert float(served[-1]["waitMs"]) >= ahead - 3, [(r["waitMs"], r["inferMs"]) for r in served]
    assert_bars_follow_server_timing(rows)


def test_batched_shares_inferences_within_what_the_browser_sends(fire: Callable[..., list[Row]]) -> None:
    rows = fire("batched")
    assert statuses(rows) == {"200": BURST}
    sizes = [int(r["batchSize"]) for r in rows]
    assert max(sizes) > 1
    assert max(sizes) <= BROWSER_CONNECTIONS  # never more at once than the browser lets through
    assert_bars_follow_server_timing(rows)


def test_tickets_follow_each_ticket_to_its_result(
    fire: Callable[..., list[Row]], burst_requests: dict[str, list[str]]
) -> None:
    # While queued, a row shows its live position and ETA (from following its ticket).
    rows = fire(
        "tickets",
        while_running="""[...document.querySelectorAll("#rows tbody tr")].some(
            (tr) => tr.dataset.jobStatus === "queued" && /앞에 [1-9]\\d*개 · 예상 [0-9.]+초/.test(tr.innerText))""",
    )
    assert statuses(rows) == {"202": BURST}
    assert all(r["jobStatus"] == "done" for r in rows)
    for row in rows:
        assert float(row["etaS"]) > 0 and float(row["actualS"]) >= float(row["inferMs"]) / 1000
        assert "약속" in row["shown"] and "실제" in row["shown"]
        assert row["ticketPx"] > 0  # the blue 202 turnaround
    # One lane, one job at a time: the last ticket really waited for the others' inferences as the lane timed
    # them (a short review costs less than SECONDS_PER_REVIEW), all but the first, which may have begun before
    # the last ticket was taken (1 ms a row: rounding).
    infer_s = sorted(float(r["inferMs"]) / 1000 for r in rows)
    assert max(float(r["actualS"]) for r in rows) >= sum(infer_s[:-1]) - 0.001 * BURST, infer_s
    assert_bars_follow_server_timing(rows)
    # All of it came over ONE stream for the whole burst, not a poll or a connection per ticket.
    requests = burst_requests["tickets"]
    streams = ticket_streams(requests)
    assert len(streams) == 1 and "/api/queue/events?" in streams[0]
    assert streams[0].count("job_id=") == BURST
    assert ticket_polls(requests) == []


def test_adaptive_beyond_the_handout_serves_some_and_refuses_the_rest_at_once(
    page: Page, fire: Callable[..., list[Row]]
) -> None:
    label = page.inner_text("label:has(input[name=path][value=adaptive])")
    assert "⑤ adaptive" in label and "교재 밖" in label
    rows = fire("adaptive")
    counts = statuses(rows)
    # How many it seats depends on the lane's measured time (bench/adaptive.py compares it with ②); here: some
    # are served, and the rest refused without running: one page is one student, whose repeats are judged once
    # the crowd's first moment (one target's time) is over or the lane would idle, never after a review of theirs.
    assert set(counts) == {"200", "429"}, counts
    refused = [r for r in rows if r["status"] == "429"]
    assert all(float(r.get("inferMs") or 0) == 0 and int(r["retryAfter"]) >= 1 for r in refused), refused
    slowest_served = max(float(r["waitMs"]) + float(r["inferMs"]) for r in rows if r["status"] == "200")
    assert all(float(r["waitMs"]) <= slowest_served for r in refused), (refused, slowest_served)
    assert_bars_follow_server_timing(rows)
    assert "포기한 것: 먼저 온 순서" in page.inner_text("#compare-cards")
    assert page.is_visible("[data-path-note=adaptive]") and "교재 밖" in page.inner_text("[data-path-note=adaptive]")


def test_repeated_review_is_answered_from_the_cache_the_second_time(page: Page) -> None:
    def fire_same(n: int) -> list[Row]:
        page.check("input[name=path][value=naive]")
        page.check("input[name=mode][value=repeat]")
        page.fill("#burst-size", str(n))
        page.click("#fire")
        page.wait_for_selector("#burst-status[data-state=done]", timeout=90_000)
        rows: list[Row] = page.evaluate(READ_ROWS)
        return rows

    fire_same(2)  # both may infer: nothing merges identical requests in flight
    again = fire_same(BURST)
    assert statuses(again) == {"200": BURST}
    assert all(r["cache"] == "hit" and float(r["inferMs"]) == 0 and r["inferPx"] == 0 for r in again)
    assert f"캐시 적중 {BURST}" in page.inner_text("#summary")


def test_last_burst_of_each_path_is_kept_for_comparison(page: Page, fire: Callable[..., list[Row]]) -> None:
    paths = [p.name for p in PATHS]
    for path in paths:
        fire(path)
    page.reload()
    cards = page.eval_on_selector_all(
        "#compare-cards .compare-card[data-mode=distinct]", "cards => cards.map((c) => [c.dataset.key, c.innerText])"
    )
    assert [key for key, _ in cards] == [f"{path}|distinct|{BURST}" for path in paths]
    shown = dict(cards)
    assert "200×5 429×7" in shown[f"limited|distinct|{BURST}"] and "202×12" in shown[f"tickets|distinct|{BURST}"]
    # Every request of every saved burst is one line on the shared time axis.
    saved = page.evaluate("Object.values(JSON.parse(localStorage.getItem('review-lab.last-bursts.v2')))")
    drawn = page.locator("#compare-chart svg line.served, #compare-chart svg line.refused").count()
    assert drawn == sum(len(burst["rows"]) for burst in saved)
    page.check("input[name=path][value=limited]")
    restored = page.evaluate(READ_ROWS)
    assert statuses(restored) == {"200": 5, "429": 7}
    page.screenshot(path=str(SCREENSHOTS / "burst-compare.png"), full_page=True)


def test_tickets_fall_back_to_polling_when_the_stream_fails(page: Page) -> None:
    # Last in the module: this small burst replaces the saved ④ burst that the comparison reads.
    seen: list[str] = []

    def record(request: Request) -> None:
        seen.append(f"{request.method} {request.url}")

    def refuse(route: Route) -> None:  # what a proxy that will not stream might answer
        route.fulfill(status=502, body="no streaming here")

    page.route(EVENTS_STREAM, refuse)
    page.on("request", record)
    try:
        rows = fire_burst(page, "tickets", 3, shot="burst-tickets-polling")
    finally:
        page.remove_listener("request", record)
        page.unroute(EVENTS_STREAM, refuse)
    assert statuses(rows) == {"202": 3}
    assert all(r["jobStatus"] == "done" and "실제" in r["shown"] for r in rows)
    assert len(ticket_streams(seen)) == 1
    polled = {re.sub(r"\?.*", "", r.rsplit("/", 1)[1]) for r in ticket_polls(seen)}
    assert len(polled) == 3  # every ticket was followed by polling instead
    assert_bars_follow_server_timing(rows)


def test_the_memory_bar_shows_the_stand_in_apart_from_the_lab(page: Page) -> None:
    """The box holds memory for the seed's libraries: the panel draws it as its own segment, and says where measured."""
    drawn = page.evaluate(
        """async () => {
          const { drawMemoryBar } = await import('/static/js/panel.js');
          const bar = document.getElementById('box-memory-bar');
          const MiB = 2 ** 20;
          drawMemoryBar(bar, { bytes: 900 * MiB, cap_bytes: 1200 * MiB, lab_bytes: 600 * MiB,
                               stand_in_bytes: 300 * MiB, stand_in_measured_here: true });
          const segs = [...bar.children].map((s) => [s.className, s.style.width]);
          return { segs, parts: document.getElementById('box-memory-parts').textContent, hidden: bar.hidden };
        }"""
    )
    assert drawn["segs"] == [["mem-seg mem-lab", "50%"], ["mem-seg mem-stand-in", "25%"]]
    assert "실습 서버 600 MiB" in drawn["parts"] and "300 MiB (이 컴퓨터에서 잰 값)" in drawn["parts"]
    assert drawn["hidden"] is False
