"""Issue 44's walk of the class view through `python -m app.front`, smaller than the tool's: student pages (each its own
key) and three burst.py runs fire ①–⑤ while /class follows, ① 12 killing the box at its cap; every check of
tools/class_view_walk.py holds (each request once as its student saw it, the death's one mark within a second, the
tallies against /api/stats and the summaries, replay, export, axe). The tool walks 12 pages against the twin
(`python -m tools.class_check … --only classview`, docs/classroom.md)."""

import json
import re
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser

from tests.box.test_box_live import CAP
from tests.browser import browser
from tests.front.classroom import classroom
from tests.front.test_front_page_live import MEDIUM_REVIEW
from tests.test_page_a11y_live import axe_path
from tools.class_view_walk import walk

pytestmark = [pytest.mark.browser, pytest.mark.slow]
__all__ = ["browser"]

PAGES = 6  # the suite runs beside other live tests on two cores; the tool walks 12


def test_the_class_view_shows_each_request_once_and_the_death_through_the_front(
    browser: Browser, tmp_path: Path
) -> None:
    axe_path()  # skipped (a failure under CI) without axe-core
    samples = tmp_path / "samples.json"  # long reviews: twelve at once on ① pass the small cap, one at a time does not
    samples.write_text(
        json.dumps([{"id": i, "text": f"{MEDIUM_REVIEW} {i}"} for i in range(1, 25)], ensure_ascii=False)
    )
    settings = {
        "LAB_BOX_SECONDS_PER_REVIEW": "0.2",
        "LAB_WARMUP": "0",
        "LAB_MEMORY_CAP_BYTES": str(CAP),
        "LAB_SAMPLES_FILE": str(samples),
        "LAB_BATCH_MAX": "4",  # a batch of eight long reviews would near the small cap itself
    }
    rows: list[dict[str, Any]] = []
    with classroom(**settings) as room:
        room.wait_for("/instructor?token=")
        found = re.search(r"/instructor\?token=(\S+)", room.output())
        assert found
        front = f"https://127.0.0.1:{room.https_port}"
        walk(browser, front, found.group(1), pages=PAGES, box_port=room.box_port, emit=lambda **row: rows.append(row))
    failed = [row for row in rows if row.get("ok") is False]
    assert not failed, json.dumps(failed, ensure_ascii=False, indent=1)
    checks = {row["check"] for row in rows}
    assert {"round", "student", "death", "deaths", "tallies", "replay", "export", "axe"} <= checks
    assert sum(1 for row in rows if row["check"] == "student") == PAGES + 3
    assert any(row["check"] == "death" and row["cause"] == "memory_cap" for row in rows)
