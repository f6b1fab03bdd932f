"""One value per tick, built once and shared by every subscriber: the live stats' fan-out.

With each /api/stats/live socket building its own stats every 0.5 s (a store count and a `stat`
each), 300 idle sockets took 30 % of a core and slowed a lone review on the box from ~0.85 s to
~1.2 s. So one task builds the JSON text once per tick while anyone subscribes, and
each socket sends the latest text; a socket too slow to send skips ticks instead of queueing them.
"""

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

log = logging.getLogger(__name__)


class Ticker:
    """`async with ticker.subscribed() as tick: tick, text = await ticker.next(tick)`; text None: the source is gone."""

    def __init__(self, build: Callable[[], Awaitable[str | None]], every_s: float) -> None:
        self._build = build
        self._every_s = every_s
        self._tick = 0
        self._text: str | None = None
        self._ticked = asyncio.Event()  # replaced by a fresh one on every tick
        self._subscribers = 0
        self._task: asyncio.Task[None] | None = None
        self.builds = 0  # how many times the value was built: once per tick, not once per subscriber

    @property
    def subscribers(self) -> int:
        return self._subscribers

    @asynccontextmanager
    async def subscribed(self) -> AsyncIterator[int]:
        """Yields the tick to wait after: the latest one is sent at once if the ticker runs (it is fresh)."""
        self._subscribers += 1
        start = self._tick - 1 if self._tick > 0 and self._task is not None and not self._task.done() else self._tick
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run(), name="live-stats-tick")
        try:
            yield start
        finally:
            self._subscribers -= 1

    async def next(self, after: int) -> tuple[int, str | None]:
        """The first tick newer than `after` (0: any), and its text."""
        while self._tick <= after:
            await self._ticked.wait()
        return self._tick, self._text

    async def _run(self) -> None:
        """Runs while anyone subscribes; ends by itself when nobody does, or when the source is gone."""
        while self._subscribers > 0:
            try:
                text = await self._build()
            except Exception as exc:  # one failed build must not end every socket; the next tick retries
                log.warning("building the live stats failed: %r", exc)
            else:
                self.builds += 1
                self._publish(text)
                if text is None:
                    return
            await asyncio.sleep(self._every_s)

    def _publish(self, text: str | None) -> None:
        self._tick += 1
        self._text = text
        ticked, self._ticked = self._ticked, asyncio.Event()
        ticked.set()

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        self._publish(None)  # nobody stays parked on a ticker that stopped
