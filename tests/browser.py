"""Headless Debian Chromium for the browser tests and tools: where it is, how it is started, one fixture."""

import os
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from playwright.sync_api import Browser, Page, sync_playwright

from kit.local import CHROMIUM, CHROMIUM_ARGS


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """One Chromium per test module; skipped where it is not installed, a failure under CI."""
    if not CHROMIUM.exists():
        if os.environ.get("CI"):
            pytest.fail(f"{CHROMIUM} is missing in CI: `just setup` installs it")
        pytest.skip(f"{CHROMIUM} is not installed")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@contextmanager
def watched_page(browser: Browser, url: str, width: int, height: int) -> Iterator[Page]:
    """A Korean page at `url` in a fresh context; the block fails if the page raised a JavaScript error."""
    context = browser.new_context(viewport={"width": width, "height": height}, locale="ko-KR")
    opened = context.new_page()
    errors: list[str] = []
    opened.on("pageerror", lambda exc: errors.append(str(exc)))
    opened.goto(url)
    yield opened
    context.close()
    assert not errors, f"JavaScript errors on the page: {errors}"
