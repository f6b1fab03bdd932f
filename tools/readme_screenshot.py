"""Regenerates the README's burst-page screenshot: a real burst of 12 on path 2 against the twin, in the box.

The server is `python -m app.box`, what `just serve` runs (one core, ~1 s per median review, 1.2 GiB),
so the picture is what a student sees.

Not a test (nothing asserts here); it drives the same Chromium the same way as the browser
tests, whose launch settings it imports. Heavy (the twin infers ~1 s per review), so take the CPU lock:

    flock /tmp/lab-cpu.lock .venv/bin/python -m tools.readme_screenshot [MODEL_DIR]
"""

import argparse
import io
from pathlib import Path

from PIL import Image
from playwright.sync_api import sync_playwright

from kit.live import ROOT
from kit.local import CHROMIUM, CHROMIUM_ARGS
from kit.serverproc import ServerProcess

TWIN = ROOT / "models" / "bge-reranker-base-twin-int8"
OUTPUT = ROOT / "docs" / "img" / "burst-limited.png"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "model_dir", nargs="?", type=Path, default=TWIN, help="the model folder to serve (default: the twin)"
    )
    model_dir = parser.parse_args().model_dir
    with ServerProcess(model_dir, box=True) as server, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 900}, locale="ko-KR")
        page.goto(f"{server.url}/")
        page.wait_for_function("document.getElementById('box-updated').textContent === '실시간'")
        page.check("input[name=path][value=limited]")
        page.fill("#burst-size", "12")
        page.click("#fire")
        page.wait_for_selector("#burst-status[data-state=done]", timeout=120_000)
        # Let the live panel catch up (it polls once a second) so it shows the box idle again.
        page.wait_for_function("document.getElementById('box-lane').textContent === '쉬는 중'")
        results = page.locator("section.results").bounding_box()
        assert results is not None
        png = page.screenshot(
            full_page=True, clip={"x": 0, "y": 0, "width": 1280, "height": results["y"] + results["height"] + 12}
        )
        browser.close()
    # A 256-colour palette keeps the committed image small; the page has few colours anyway.
    image = Image.open(io.BytesIO(png)).convert("RGB").quantize(colors=256)
    OUTPUT.parent.mkdir(parents=True, exist_ok=True)
    image.save(OUTPUT, optimize=True)
    print(f"{OUTPUT.relative_to(ROOT)}: {OUTPUT.stat().st_size // 1024} KiB")


if __name__ == "__main__":
    main()
