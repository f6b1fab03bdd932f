"""Merge several async iterators into one, so one stream can follow many things at once."""

import asyncio
import math
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class _Ended:
    """A source has run out (error is None) or raised."""

    error: Exception | None = None


async def merged(
    sources: Sequence[AsyncIterator[T]], *, quiet_s: float = math.inf, name: str = "merge"
) -> AsyncGenerator[T | None, None]:
    """Every source's items as they arrive, each source's own order kept; None after `quiet_s` without one.

    One task drains each source into a shared queue, so a slow source never holds up the others.
    Ends once every source has ended and re-raises the first error. However the merged iterator
    stops (exhausted, closed, or cancelled because its client went away), its tasks are cancelled
    and awaited before it returns: nothing is left running.
    """
    queue: asyncio.Queue[tuple[T] | _Ended] = asyncio.Queue()

    async def drain(source: AsyncIterator[T]) -> None:
        try:
            async for item in source:
                queue.put_nowait((item,))
        except Exception as exc:
            queue.put_nowait(_Ended(exc))
        else:
            queue.put_nowait(_Ended())

    loop = asyncio.get_running_loop()
    tasks = [loop.create_task(drain(source), name=f"{name}-{i}") for i, source in enumerate(sources)]
    try:
        running = len(tasks)
        while running:
            try:
                async with asyncio.timeout(None if math.isinf(quiet_s) else quiet_s):
                    got = await queue.get()
            except TimeoutError:
                yield None
                continue
            if isinstance(got, _Ended):
                running -= 1
                if got.error is not None:
                    raise got.error
                continue
            yield got[0]
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
