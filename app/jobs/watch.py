"""One poll of the store per process, however many event streams follow tickets.

A follower that read its job every `job_poll_s` in case another box changed it would cost
76 % CPU for 100 followers × 20 tickets and raise POST latency from 7 to 190 ms (measured).
So one task asks the store for its change counter (`JobStore.version`, one cheap read)
while anyone is waiting, and wakes every follower only when it moved; this box's own
changes wake them at once through `notify`.
"""

import asyncio
import logging
import math
import time
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, TypeVar

log = logging.getLogger(__name__)
T = TypeVar("T")


class Versioned(Protocol):
    async def version(self) -> int:
        """A number that changes whenever any box changes a job (not on lease renewals)."""


class StoreWatcher:
    """A follower marks, reads, then waits from its mark::

    since = watcher.mark()  # before the read: a change after it ends the wait at once
    job = await store.get(job_id)
    await watcher.wait(since, timeout_s)
    """

    def __init__(self, store: Versioned, poll_s: float) -> None:
        self._store = store
        self._poll_s = poll_s
        self._changed = asyncio.Event()  # replaced by a fresh one on every change
        # Kept between rounds: versions only grow, so a stale baseline can cause one extra
        # wake-up, never a missed change.
        self._last: int | None = None
        self._waiting = 0
        # Reads begun since the last change, with when each began: shared while in flight or
        # younger than one poll, so a time-based answer (an ETA) is never older than that.
        self._reads: dict[str, tuple[float, asyncio.Task[Any]]] = {}
        self._task: asyncio.Task[None] | None = None
        self.polls = 0  # version reads so far: one per round, not one per follower

    @property
    def waiting(self) -> int:
        return self._waiting

    def notify(self) -> None:
        """This box changed the store: wake every follower now, without waiting for the poll."""
        changed, self._changed = self._changed, asyncio.Event()
        self._reads = {}
        changed.set()

    async def read(self, key: str, fetch: Callable[[], Awaitable[T]]) -> T:
        """`fetch()`, shared by every caller asking for `key` until the next change (or one poll): a change
        wakes all followers of a job at once, and one read answers them all (100 streams on
        the same 20 tickets make 20 reads per change, not 2,000)."""
        began, task = self._reads.get(key, (0.0, None))
        if task is None or (task.done() and time.monotonic() - began >= self._poll_s):
            task = asyncio.ensure_future(fetch())
            task.add_done_callback(_retrieve)  # an error nobody is left to await is not an error
            self._reads[key] = (time.monotonic(), task)
        result: T = await asyncio.shield(task)  # one leaving follower must not cancel the others' read
        return result

    def mark(self) -> asyncio.Event:
        return self._changed

    async def wait(self, since: asyncio.Event | None = None, timeout_s: float = math.inf) -> bool:
        """Until the store changes after `since` (a `mark()`; now if None), True, or until
        `timeout_s` passes, False."""
        changed = self._changed if since is None else since
        if changed.is_set():
            return True
        self._waiting += 1
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._poll(), name="store-watch")
        try:
            async with asyncio.timeout(None if math.isinf(timeout_s) else timeout_s):
                await changed.wait()
            return True
        except TimeoutError:
            return False
        finally:
            self._waiting -= 1

    async def _poll(self) -> None:
        """Runs while anyone waits; ends by itself when nobody does."""
        while self._waiting > 0:
            try:
                version = await self._store.version()
                self.polls += 1
            except Exception as exc:  # a store hiccup: followers keep waiting, the next round retries
                log.warning("watching the job store failed: %s", exc)
            else:
                if version != self._last:
                    self._last = version
                    self.notify()
            await asyncio.sleep(self._poll_s)

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        self.notify()  # nobody stays parked on a watcher that stopped


def _retrieve(task: "asyncio.Task[Any]") -> None:
    if not task.cancelled():
        task.exception()
