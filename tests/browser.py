"""Headless Debian Chromium for the browser tests and tools: where it is, how it is started, one fixture."""

import os
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, sync_playwright

from app.bench.local import CHROMIUM, CHROMIUM_ARGS


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
