"""The drain a SIGTERM starts: one event that ends every event stream with a last word.

The server (app/serve.py) sets it before it waits for open connections. A stream that kept
following would hold that wait until the graceful timeout and then be cut with a traceback;
instead it says `event: shutdown` and closes, and the browser's EventSource reconnects.
"""

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator
from typing import TypeVar

__all__ = ["until_set"]

T = TypeVar("T")


async def until_set(items: AsyncIterator[T], stop: asyncio.Event) -> AsyncGenerator[T, None]:
    """`items` as they come, until they end or `stop` is set; the step in progress is then cancelled,
    however this generator stops (a client that left included), so nothing is left running."""
    stopped = asyncio.ensure_future(stop.wait())
    step: asyncio.Future[T] | None = None
    try:
        while not stop.is_set():
            step = asyncio.ensure_future(anext(items))
            await asyncio.wait({step, stopped}, return_when=asyncio.FIRST_COMPLETED)
            if not step.done():
                return
            try:
                item = step.result()
            except StopAsyncIteration:
                return
            yield item
    finally:
        for pending in (step, stopped):
            if pending is not None and not pending.done():
                pending.cancel()
                await asyncio.gather(pending, return_exceptions=True)
