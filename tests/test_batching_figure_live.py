"""③'s "where does batching pay?" figure in a real browser: both measured curves, at the box's speed, with
round ticks, no negative coefficient, Korean words only; after a ③ burst, the student's own batches.

The Korean rule this checks: in everything the figure shows (its text, every SVG label and every tooltip)
the only Latin letters are the formula's variables a, b and n, standing alone, and the measurement's UTC and
CPU brand as written (AMD EPYC, never transliterated); units are Korean (초).
Real headless Chromium against a real server: the tiny model slowed to about 0.3 s a review.
"""

import json
import math
import re
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, Response

from app.api.records_ko import CPU_BRANDS
from app.settings import PROJECT_ROOT
from kit.live import LiveServer, live_server, slowed
from tests.browser import browser, watched_page

pytestmark = [pytest.mark.browser, pytest.mark.slow]
__all__ = ["browser"]  # the module-scoped Chromium fixture (tests/browser.py)

CURVE = json.loads((PROJECT_ROOT / "static" / "batching-curve.json").read_text(encoding="utf-8"))
LATIN = re.compile(r"[A-Za-z]+")
VARIABLES = {"a", "b", "n"}
RECORD_WORDS = {"UTC", *CPU_BRANDS}  # when and on what it was measured, as written
GUARD_MS = 90_000  # failure guards for waits, never delays

READ_FIGURE = """() => {
  const figure = document.getElementById("batching-curve");
  const marks = (svg, cls) => [...svg.querySelectorAll("." + cls)].map((m) => ({
    n: Number(m.dataset.n), seconds: Number(m.dataset.seconds), count: Number(m.dataset.count || 0)}));
  const panels = [...figure.querySelectorAll("svg.curve-svg")].map((svg) => ({
    model: svg.dataset.model, a: Number(svg.dataset.aS), b: Number(svg.dataset.bS),
    ticks: svg.dataset.yTicks.split(" ").map(Number),
    tickLabels: [...svg.querySelectorAll(".y-tick")].map((t) => t.textContent),
    measured: marks(svg, "measured"), student: marks(svg, "student")}));
  const svgWords = [...figure.querySelectorAll("svg text, svg title")].map((t) => t.textContent);
  return {panels, text: [figure.innerText, ...svgWords].join("\\n"),
          legend: [...figure.querySelectorAll(".curve-legend li")].map((li) => li.textContent),
          scale: figure.querySelector(".curve-scale").innerText};
}"""


@pytest.fixture(scope="module")
def server() -> Iterator[LiveServer]:
    with live_server(**slowed(0.3)) as running:
        yield running


@pytest.fixture
def page(browser: Browser, server: LiveServer) -> Iterator[Page]:
    with watched_page(browser, f"{server.url}/", 1366, 900) as opened:
        opened.check("input[name=path][value=batched]")  # ③'s note holds the figure
        opened.wait_for_selector("#batching-curve[data-state=drawn]")
        yield opened


def read(page: Page) -> dict[str, Any]:
    figure: dict[str, Any] = page.evaluate(READ_FIGURE)
    return figure


def is_round_step(step: float) -> bool:
    exponent = 10 ** math.floor(math.log10(step))
    return any(abs(step - m * exponent) < 1e-9 * max(1.0, step) for m in (1, 2, 5))


def test_both_measured_curves_are_drawn_at_the_box_speed_with_round_ticks_and_no_negative_cost(page: Page) -> None:
    figure = read(page)
    assert [p["model"] for p in figure["panels"]] == ["twin", "tiny"]
    stated = re.search(r"×([0-9.]+)", figure["scale"])  # the scale the figure says it used
    assert stated is not None
    factor = float(stated.group(1))
    assert factor > 0
    for panel in figure["panels"]:
        committed = next(c for c in CURVE["curves"] if c["model"] == panel["model"] and c["chunk_pairs"] > 0)
        assert [m["n"] for m in panel["measured"]] == [p["n"] for p in committed["points"]] == list(range(1, 9))
        drawn = [m["seconds"] / p["seconds"] for m, p in zip(panel["measured"], committed["points"], strict=True)]
        assert max(drawn) - min(drawn) < 1e-6 * max(drawn)  # every point scaled by one factor ...
        assert abs(drawn[0] - factor) < 0.01 * factor  # ... the one the figure states (3 significant digits)
        assert panel["a"] >= 0 and panel["b"] >= 0 and committed["fit"]["a_s"] >= 0 and committed["fit"]["b_s"] >= 0
        ticks = panel["ticks"]
        step = ticks[1] - ticks[0]
        assert ticks[0] == 0 and is_round_step(step)
        assert all(abs(t - i * step) < 1e-9 * max(1.0, step) for i, t in enumerate(ticks))
        assert ticks[-1] >= max(m["seconds"] for m in panel["measured"])
        assert all(float(label) == t for label, t in zip(panel["tickLabels"], ticks, strict=True))
    assert len(figure["legend"]) == 2
    assert not any(re.search(r"[-−]\s*\d", item) for item in figure["legend"])  # no negative number shown


def test_every_word_on_the_figure_is_korean(page: Page) -> None:
    text = read(page)["text"]
    assert "측정:" in text and CURVE["date"] in text and CURVE["host_ko"] in text and "UTC" in text
    allowed = VARIABLES | RECORD_WORDS
    assert set(LATIN.findall(text)) <= allowed, sorted(set(LATIN.findall(text)) - allowed)


def test_a_batched_burst_puts_the_students_batches_on_the_twins_axes(page: Page) -> None:
    answers: list[tuple[int, int, float]] = []  # (batch id, batch size, this answer's inference ms)

    def note(response: Response) -> None:
        if "/api/batched/predict" in response.url and response.status == 200:
            timing = dict(re.findall(r"(\w+);dur=([0-9.]+)", response.headers["server-timing"]))
            size, batch = int(response.headers["x-batch-size"]), int(response.headers["x-batch-id"])
            answers.append((batch, size, float(timing["infer"])))

    page.on("response", note)
    assert read(page)["panels"][0]["student"] == []
    page.check("input[name=mode][value=distinct]")
    page.fill("#burst-size", "12")
    page.click("#fire")
    page.wait_for_selector("#burst-status[data-state=done]", timeout=GUARD_MS)
    page.wait_for_function("Number(document.getElementById('batching-curve').dataset.studentBatches) > 0")
    twin, tiny = read(page)["panels"]
    assert tiny["student"] == []  # the student's batches are the box's model: the twin's axes only
    marks = sorted((m["n"], round(m["seconds"] * 1000, 1)) for m in twin["student"])
    by_batch: dict[int, list[tuple[int, float]]] = {}
    for batch, size, infer_ms in answers:
        by_batch.setdefault(batch, []).append((size, infer_ms))
    # One mark per batch, at its last member's answer: members are answered as their own pairs finish.
    expected = sorted((rows[0][0], round(max(ms for _, ms in rows), 1)) for rows in by_batch.values())
    assert len(answers) == 12 and marks == expected
    assert all(len(rows) == rows[0][0] for rows in by_batch.values())  # alone on the box: every batch seen whole
    assert sum(n for n, _ in marks) == 12
    assert "빨간 네모" in page.inner_text("#batching-curve .curve-student")


def test_in_class_a_batch_shared_with_other_students_is_counted_not_drawn(page: Page) -> None:
    """Members are answered as their own pairs finish, so a batch's time is its last member's: a student who saw
    only some members of a batch (the rest were classmates') cannot know it, and the figure must not guess."""
    row = {"status": 200, "cache": "miss"}
    burst = {
        "path": "batched",
        "rows": [
            {**row, "batchId": 7, "batchSize": 2, "inferMs": 410.0},
            {**row, "batchId": 7, "batchSize": 2, "inferMs": 820.0},  # the whole batch of 2, its last at 820 ms
            {**row, "batchId": 8, "batchSize": 3, "inferMs": 300.0},  # one of three: the others went to classmates
            {**row, "batchId": 9, "batchSize": 1, "inferMs": 500.0, "cache": "hit"},  # a cache hit is no batch
        ],
    }
    seen = page.evaluate("async (burst) => (await import('/static/js/batchdata.js')).studentBatches(burst)", burst)
    assert seen == {"points": [{"n": 2, "seconds": 0.82, "count": 1}], "partial": 1}
