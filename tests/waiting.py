"""Waiting for a condition with a deadline: a failure guard, never a fixed delay."""

import asyncio
from collections.abc import Awaitable, Callable

# Checks start 1 ms apart and back off to this: quick for state inside the app, and a check that asks a real
# server (12 store reads, an HTTP request) no longer runs back to back, taking the CPU from what it waits on.
MAX_GAP_S = 0.05


async def eventually(check: Callable[[], Awaitable[bool]], limit_s: float = 10.0) -> None:
    """Re-check after yielding to the loop until `check` holds; fail loudly past `limit_s`.

    For state that lives inside the app (a job's status), where there is no event to await.
    """
    gap = 0.001
    async with asyncio.timeout(limit_s):
        while not await check():
            await asyncio.sleep(gap)
            gap = min(gap * 2, MAX_GAP_S)
