"""Proposed screenshots of the burst page at 1366x900 and 390x844, into docs/img/ (the lead retakes the
README's on the merged box). Drives the same Chromium as the browser tests against the tiny model slowed
to 1 s a review. Not a test: nothing asserts here.

    flock /tmp/lab-cpu.lock .venv/bin/python -m tools.page_screenshots
"""

import argparse
import io

from PIL import Image
from playwright.sync_api import Page, sync_playwright

from kit.live import ROOT, live_server, slowed
from kit.local import CHROMIUM, CHROMIUM_ARGS

OUT = ROOT / "docs" / "img"
LIVE = """document.getElementById('burst-status').dataset.state === 'running'
  && document.getElementById('box-lane').dataset.busy === 'true'
  && document.querySelectorAll('#rows tbody tr.pending').length >= 6
  && [...document.querySelectorAll('#rows tbody tr.pending td.rt')].some((td) => parseFloat(td.textContent) >= 2)"""


def save(png: bytes, name: str) -> None:
    # Not quantized: a 256-colour palette turned the legend's orange brown (few pixels carry it).
    image = Image.open(io.BytesIO(png)).convert("RGB")
    OUT.mkdir(parents=True, exist_ok=True)
    image.save(OUT / name, optimize=True)
    print(f"docs/img/{name}: {(OUT / name).stat().st_size // 1024} KiB")


def fire(page: Page, path: str, mode: str = "distinct", size: int = 12, wait: bool = True) -> None:
    page.check(f"input[name=path][value={path}]")
    page.check(f"input[name=mode][value={mode}]")
    page.fill("#burst-size", str(size))
    page.click("#fire")
    if wait:
        page.wait_for_selector("#burst-status[data-state=done]", timeout=120_000)


def main() -> None:
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    with live_server(**slowed(1)) as server, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        desk = browser.new_page(viewport={"width": 1366, "height": 900}, locale="ko-KR")
        desk.goto(f"{server.url}/")
        for path in ("naive", "limited"):
            fire(desk, path)
        fire(desk, "limited", mode="repeat")
        fire(desk, "batched", wait=False)
        desk.wait_for_function(LIVE, timeout=60_000)
        desk.locator("section.results").scroll_into_view_if_needed()
        save(desk.screenshot(), "burst-live-1366.png")
        desk.wait_for_selector("#burst-status[data-state=done]", timeout=120_000)
        fire(desk, "tickets")
        desk.locator("section.compare").scroll_into_view_if_needed()
        save(desk.screenshot(), "burst-compare-1366.png")
        phone = browser.new_page(viewport={"width": 390, "height": 844}, locale="ko-KR")
        phone.goto(f"{server.url}/")
        fire(phone, "limited")
        phone.locator("section.results").scroll_into_view_if_needed()
        save(phone.screenshot(), "burst-limited-390.png")
        browser.close()


if __name__ == "__main__":
    main()
