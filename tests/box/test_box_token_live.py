"""The address the box prints at start-up turns the knobs for the whole lesson: a real supervisor, the tiny model,
and two deaths of its server process (kill -9, the supervisor left alone) before the knob is turned."""

import asyncio
import os
import re
import signal
import stat
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser

from tests.box.test_box_live import Box, boxed
from tests.browser import browser, watched_page
from tests.waiting import eventually

pytestmark = pytest.mark.slow
__all__ = ["browser"]
GUARD_MS = 120_000  # failure guards, never delays

PRINTED = re.compile(r"^Instructor page: (http://\S+/instructor\?token=(\S+)) ", re.MULTILINE)


def wait_until(check: Callable[[], Awaitable[bool]], limit_s: float) -> None:
    """`eventually` on a thread of its own: Playwright's sync API keeps an event loop running in this one."""
    failed: list[BaseException] = []

    def run() -> None:
        try:
            asyncio.run(eventually(check, limit_s=limit_s))
        except BaseException as exc:  # re-raised in the test's thread
            failed.append(exc)

    waiter = threading.Thread(target=run)
    waiter.start()
    waiter.join()
    if failed:
        raise failed[0]


def server_pid(box: Box) -> int:
    children = Path(f"/proc/{box.process.pid}/task/{box.process.pid}/children").read_text().split()
    assert len(children) == 1, children
    return int(children[0])


def printed(box: Box) -> tuple[str, str]:
    """The instructor page's address and token, as the supervisor printed them once at start-up."""

    async def said() -> bool:
        return PRINTED.search(box.log()) is not None

    wait_until(said, limit_s=30)
    found = list(PRINTED.finditer(box.log()))
    assert len(found) == 1, [m.group() for m in found]
    return found[0].group(1), found[0].group(2)


def back_as(box: Box, incarnation: int) -> None:
    """Polls /health and /api/stats until the next incarnation answers (a deadline as the failure guard)."""

    async def answers() -> bool:
        async with httpx.AsyncClient(timeout=10) as client:
            try:
                health = await client.get(f"{box.url}/health")
                stats = (await client.get(f"{box.url}/api/stats")).json()
            except (httpx.TransportError, ValueError):
                return False
        return health.status_code == 200 and stats["box"]["incarnation"] == incarnation

    wait_until(answers, limit_s=180)


def test_the_start_up_token_turns_a_knob_after_two_deaths_of_the_server() -> None:
    with boxed(LAB_BOX_SECONDS_PER_REVIEW="0") as box:
        page, token = printed(box)
        file = box.log_path.parent / "instructor-token"  # boxed()'s LAB_INSTRUCTOR_TOKEN_FILE
        first = server_pid(box)
        for incarnation in (2, 3):
            os.kill(server_pid(box), signal.SIGKILL)
            back_as(box, incarnation)
        assert server_pid(box) != first and box.process.poll() is None  # the supervisor itself lived on
        turned = httpx.put(
            f"{box.url}/api/knobs/limited_seats", json={"value": 7}, headers={"Authorization": f"Bearer {token}"}
        )
        opened = httpx.get(page)
        stats = httpx.get(f"{box.url}/api/stats").json()
    assert turned.status_code == 200, turned.text
    assert opened.status_code == 200 and "강사용 손잡이" in opened.text
    assert stats["box"]["deaths"] == 2 and stats["knobs"]["values"]["limited_seats"] == 7
    assert file.read_text().strip() == token and stat.S_IMODE(file.stat().st_mode) == 0o600


@pytest.mark.browser
def test_an_open_instructor_page_carries_on_across_a_real_death(browser: Browser) -> None:
    """No reload: the page opened before the death reads the values back and turns a knob after it."""
    with boxed(LAB_BOX_SECONDS_PER_REVIEW="0") as box:
        page_url, token = printed(box)
        with watched_page(browser, page_url, 1000, 800) as page:
            row = page.locator("#knobs tr[data-setting=batch_max]")
            row.locator("input").fill("5")
            # The page has read the box's deaths: the death below is one more, as the student pages count it.
            page.wait_for_selector("#box-alert[data-deaths='0']", state="attached", timeout=GUARD_MS)
            os.kill(server_pid(box), signal.SIGKILL)
            back_as(box, 2)
            page.wait_for_selector("#box-alert[data-state=back]", timeout=GUARD_MS)
            said = page.inner_text("#box-alert")
            assert "상자가 다시 살아났습니다" in said and "1번 죽음" in said, said
            assert page.get_attribute("#box-alert", "data-deaths") == "1"
            # Changed after the death by another hand: the open page must show it, so it has read the new box.
            changed = httpx.put(
                f"{box.url}/api/knobs/batch_max", json={"value": 3}, headers={"Authorization": f"Bearer {token}"}
            )
            assert changed.status_code == 200, changed.text
            page.wait_for_function(
                "document.querySelector('#knobs tr[data-setting=batch_max] .now').textContent === '3'",
                timeout=GUARD_MS,
            )
            assert row.locator("input").input_value() == "5"
            row.locator("button").click()
            page.wait_for_selector("#knob-result[data-status='200']", timeout=GUARD_MS)
            # The row's live value follows the box's answer (or its next push); a guard, not a delay.
            page.wait_for_function(
                "document.querySelector('#knobs tr[data-setting=batch_max] .now').textContent === '5'",
                timeout=GUARD_MS,
            )
        assert httpx.get(f"{box.url}/api/stats").json()["knobs"]["values"]["batch_max"] == 5
