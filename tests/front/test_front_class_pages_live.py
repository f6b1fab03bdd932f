"""Twelve pages of one class behind one address, through the front: live panels, the box's refusals, the commands.

Real headless Chromium against the nginx front before a real server (tiny model, slowed). Every page
comes from 127.0.0.1, one address as a school's NAT makes it; each browser context is a student with
the key the box gives at the first load.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page

from app.contract import student
from kit.live import live_server, slowed
from tests.browser import browser
from tests.front.test_front_page_live import STATUS_CELLS, open_page
from tests.front_proxy import fronted
from tests.test_burst_page_live import GUARD_MS, finish, fire

pytestmark = [pytest.mark.browser, pytest.mark.slow]
__all__ = ["browser"]

PAGES = 12


def statuses(page: Page) -> list[str]:
    return list(page.eval_on_selector_all("#rows tbody td.status", STATUS_CELLS))


def details(page: Page) -> str:
    return page.inner_text("#rows tbody")


def test_twelve_pages_on_one_address_keep_their_panels_and_meet_the_box(browser: Browser) -> None:
    with live_server(**slowed(0.3, warm=False)) as server, fronted(server.url) as front:
        pages = [open_page(browser, front.url) for _ in range(PAGES)]  # each waits for its live socket
        keys = {c["value"] for p in pages for c in p.context.cookies() if c["name"] == student.COOKIE}
        assert len(keys) == PAGES and all(student.valid(k) for k in keys)  # twelve students, not one address
        for page in pages:
            fire(page, "limited", 12)
        for page in pages:
            finish(page)
        every = [s for page in pages for s in statuses(page)]
        assert every.count("200") >= 1 and set(every) <= {"200", "429", "503"}, every  # 503: ② waited past 15 s
        text = " ".join(details(page) for page in pages)
        assert "front_limit" not in text and "상자가 감당 못 함" in text
        summary = pages[0].inner_text("#summary")
        assert "상자가 감당 못 함" in summary or "429" not in summary
        for page in pages:  # every panel is still live
            assert page.get_attribute("#box-panel", "data-channel") == "websocket"
        for page in pages:
            page.context.close()


def test_the_pages_terminal_command_works_verbatim_through_the_front(browser: Browser, tmp_path: Path) -> None:
    """A student copies the HTTP/2 note's command from the page and runs it: burst.py downloads and fires 50."""
    with live_server(**slowed(0.02, warm=False)) as server, fronted(server.url) as front:
        page = open_page(browser, front.url)
        page.wait_for_selector(".note-conn[data-http2-only]:not([hidden])", timeout=GUARD_MS)
        command = page.inner_text(".note-conn[data-http2-only] code.cmd")
        page.context.close()
        assert command.startswith(f"curl -kO {front.url}/static/burst.py && python3 burst.py {front.url} 50 -k")
        python = os.path.dirname(sys.executable)  # `python3` of the student: this one, standard library only
        env = {**os.environ, "PATH": f"{python}:{os.environ['PATH']}"}
        done = subprocess.run(
            ["bash", "-c", command], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600, check=False
        )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert (tmp_path / "burst.py").read_text().startswith("#!")  # the script, not nginx's 400 page
    assert "처리" in done.stdout
