"""Hand the heap a crowd grew back to the kernel once the crowd is over: glibc keeps freed pages for reuse otherwise.

The box's memory cgroup counts what the process holds, not what it uses: after twelve ①
inferences at once, the activations they freed stay in glibc's per-thread heaps (and in
onnxruntime's arena, see `RerankerModel(memory=...)`) and the next student starts near the cap.
Any crowd grows the heap, not ①'s alone: a thousand ② or ⑤ at once, nearly all refused, are a
thousand connections, requests and answers, and what glibc kept of them stayed. So the box trims
whenever a crowd ends on any path: the lane has gone idle and no ① inference runs, and that has
held for `SETTLE_S` (a crowd's next turn on the lane follows its last within milliseconds).
"""

import asyncio
import ctypes
import ctypes.util
import sys
from collections.abc import Callable
from functools import cache
from typing import Any

# Far longer than the gap between two turns of a crowd on the lane (a seat or ticket hands over its next
# review within milliseconds, ③'s window is 25 ms), and short beside the 10 s the box is measured at after one.
SETTLE_S = 0.5

Later = Callable[[float, Callable[[], None]], Any]  # asyncio's call_later: (delay, callback) → a handle to cancel


@cache
def _libc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name or "libc.so.6")
    except OSError:
        return None
    return libc if hasattr(libc, "malloc_trim") else None  # musl has none


def malloc_trim() -> bool:
    """Return free heap pages to the kernel (glibc `malloc_trim(0)`); False where there is no such call."""
    libc = _libc()
    if libc is None:
        return False
    libc.malloc_trim(0)
    return True


class GiveBack:
    """Trims once after each crowd: `ended()` is called (from any thread) when work may have ended — the lane
    going idle, the last ① inference of a crowd — and `SETTLE_S` later, if `busy()` is still false, the
    heap is trimmed (23 ms on the event loop, docs/box.md: the box is quiet by then). A busy box waits for
    the next `ended()`: the crowd is not over."""

    def __init__(
        self,
        trim: Callable[[], object],
        busy: Callable[[], bool],
        *,
        settle_s: float = SETTLE_S,
        later: Later | None = None,
    ) -> None:
        self._trim = trim
        self._busy = busy
        self._settle_s = settle_s
        self._loop = asyncio.get_running_loop()
        self._later: Later = later or self._loop.call_later
        self._armed: Any = None  # the pending check's handle
        self._closed = False
        self.trims = 0

    def ended(self) -> None:
        """Work may have ended: check again once the box has been quiet for `settle_s` (thread-safe)."""
        if not self._closed:
            self._loop.call_soon_threadsafe(self._arm)

    def close(self) -> None:
        self._closed = True
        if self._armed is not None:
            self._armed.cancel()
            self._armed = None

    def _arm(self) -> None:
        if self._closed:
            return
        if self._armed is not None:
            self._armed.cancel()  # the settle counts from the last end seen
        self._armed = self._later(self._settle_s, self._check)

    def _check(self) -> None:
        self._armed = None
        if self._closed or self._busy():
            return
        self._trim()
        self.trims += 1
