"""Waiting for a condition with a deadline: a failure guard, never a fixed delay."""

import asyncio
from collections.abc import Awaitable, Callable


async def eventually(check: Callable[[], Awaitable[bool]], limit_s: float = 10.0) -> None:
    """Re-check after yielding to the loop until `check` holds; fail loudly past `limit_s`.

    For state that lives inside the app (a job's status), where there is no event to await.
    """
    async with asyncio.timeout(limit_s):
        while not await check():  # noqa: ASYNC110
            await asyncio.sleep(0.001)
