"""Where this machine keeps what tests and tools use outside the lab: Chromium and a Redis.

Read from the environment, with this lab machine's places as defaults: `LAB_CHROMIUM`
(`/usr/bin/chromium`, Debian's: Playwright's own browser download needs the internet) and
`LAB_TEST_REDIS_URL` (`redis://127.0.0.1:6379`, a server without a db; each test or tool picks its own).
"""

import os
from pathlib import Path
from urllib.parse import urlsplit

CHROMIUM = Path(os.environ.get("LAB_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
REDIS_URL = os.environ.get("LAB_TEST_REDIS_URL", "redis://127.0.0.1:6379").rstrip("/")


def redis_db(db: int, query: str = "") -> str:
    """The test Redis, database `db`: `redis_db(5, "prefix=t1")` → redis://127.0.0.1:6379/5?prefix=t1."""
    return f"{REDIS_URL}/{db}" + (f"?{query}" if query else "")


def redis_address() -> tuple[str, int]:
    """(host, port) of the test Redis, for a plain TCP check."""
    parts = urlsplit(REDIS_URL)
    return parts.hostname or "127.0.0.1", parts.port or 6379
