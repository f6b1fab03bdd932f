"""Path 2's lobby: returners whose seat is not free yet wait here, the earliest-due first, until one frees.

Every change (a seat freed, the seats retuned, someone joined or left the line) wakes them all, and each
looks again at its own place in line and its hold: the first `free` of them may sit down. So a wake-up is
never lost to a returner who has left, and no one can take another's turn (walk-ins wait outside while
anyone stands here: the gate asks `bool(lobby)`).
"""

import asyncio
import bisect
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(eq=False, slots=True)
class _Returner:
    due: float
    order: int  # ties keep arrival order
    key: tuple[float, int] = field(init=False)

    def __post_init__(self) -> None:
        self.key = (self.due, self.order)


class Lobby:
    """Owns the line of returners and the one future they wait on; the gate calls `changed()`."""

    def __init__(self) -> None:
        self._line: list[_Returner] = []
        self._arrived = 0
        self._change: asyncio.Future[None] | None = None

    def __len__(self) -> int:
        return len(self._line)

    def changed(self) -> None:
        """A seat may have freed, the seats changed or someone left the line: everyone looks again."""
        if self._change is not None and not self._change.done():
            self._change.set_result(None)
        self._change = None

    async def wait(self, due: float, free: Callable[[], int], may_stay: Callable[[], bool], limit_s: float) -> bool:
        """True once this returner is among the first `free()` in line; False when `may_stay()` turns false
        (its hold ended) or `limit_s` passes first. Cancellation leaves the line too."""
        self._arrived += 1
        me = _Returner(due, self._arrived)
        bisect.insort(self._line, me, key=lambda r: r.key)
        self.changed()  # the others look again too: one of them may have outstayed its hold meanwhile
        seated = False
        try:
            async with asyncio.timeout(limit_s):
                while True:
                    if not may_stay():
                        return False
                    if self._line.index(me) < free():
                        seated = True
                        return True
                    await asyncio.shield(self._next_change())  # leaving must not cancel the others' wake-up
        except TimeoutError:
            return False
        finally:
            self._line.remove(me)
            if not seated:
                self.changed()  # the ones behind move up a place

    def _next_change(self) -> "asyncio.Future[None]":
        if self._change is None:
            self._change = asyncio.get_running_loop().create_future()
        return self._change
