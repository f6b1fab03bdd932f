"""One bound on every kind of connection: a request deadline, a cap on open connections, a share for live ones.

uvicorn closes a connection only when it sits idle after an answer (`--timeout-keep-alive`, and
any byte resets that timer): a socket that sends half a request line, or nothing, is kept
forever, and 1,100 of them made /health fail under a 1,024 open-file limit.
`--limit-concurrency` does not help: it counts those sockets too, and answers every real request
503 once they reach it. So each connection must deliver a whole request within
`request_timeout_s` of connecting or of its previous answer, and at `max_connections` the oldest
connection still waiting for a request is closed to make room for the newcomer.

Live connections (a WebSocket of /api/stats/live, an event stream) hold their socket for minutes
and cannot be evicted: 512 of them filled a 512-descriptor box and /health failed.
They stay counted after an upgrade, and at most `max_live` of them (half the cap or less) are
served at once, so the other half of the descriptors always takes requests.
"""

import json
from http import HTTPStatus
from typing import Protocol

from app.errors import TOO_MANY_CONNECTIONS, ErrorKind, error_body

__all__ = ["REFUSAL", "TRY_AGAIN_LATER", "Connection", "ConnectionGuard", "LiveSeat", "raw_answer"]

# RFC 6455 §7.4 / IANA registry: 1013 "Try Again Later", the server is overloaded. The page falls
# back to polling /api/stats on it instead of reconnecting at once.
TRY_AGAIN_LATER = 1013


def raw_answer(kind: ErrorKind, detail: str, *, retry_after_s: int | None = None) -> bytes:
    """A whole HTTP/1.1 answer in the one error shape, for refusals made before any request reaches the app."""
    body = json.dumps(error_body(kind, detail))
    retry = "" if retry_after_s is None else f"retry-after: {retry_after_s}\r\n"
    head = (
        f"HTTP/1.1 {kind.status} {HTTPStatus(kind.status).phrase}\r\ncontent-type: application/json\r\n{retry}"
        f"connection: close\r\ncontent-length: {len(body)}\r\n\r\n"
    )
    return (head + body).encode()


REFUSAL = raw_answer(TOO_MANY_CONNECTIONS, "Every connection this box allows is busy; retry shortly.", retry_after_s=1)


class Connection(Protocol):
    @property
    def waiting(self) -> bool: ...

    def close(self) -> None: ...


class LiveSeat:
    """One live connection's share of the bound; `release()` may be called more than once."""

    def __init__(self, guard: "ConnectionGuard") -> None:
        self._guard: ConnectionGuard | None = guard

    def release(self) -> None:
        if self._guard is not None:
            self._guard.live -= 1
            self._guard = None


class ConnectionGuard:
    """One per app: its open connections, oldest first, the limits, and what they did."""

    def __init__(self, *, request_timeout_s: float, max_connections: int, max_live: int) -> None:
        self.request_timeout_s = request_timeout_s
        self._max_live_wanted = max_live
        self.max_connections = max_connections
        self.max_live = self._live_cap(max_connections)
        self._open: dict[Connection, None] = {}  # a dict keeps arrival order
        self.live = 0  # WebSockets and event streams being served now
        self.timed_out = 0  # closed: no whole request within the deadline
        self.evicted = 0  # closed to make room: the oldest still waiting for a request
        self.refused = 0  # newcomers answered 503: every open connection had a request in progress
        self.refused_live = 0  # live sockets refused: `max_live` already served

    def _live_cap(self, max_connections: int) -> int:
        return max(1, min(self._max_live_wanted, max_connections // 2))

    def fit(self, max_connections: int) -> None:
        """Lower the caps to what the open-file limit allows (app/serve.py)."""
        self.max_connections = max_connections
        self.max_live = self._live_cap(max_connections)

    @property
    def open(self) -> int:
        return len(self._open)

    def admit(self, newcomer: Connection) -> bool:
        """Room for `newcomer`, made by closing the oldest connection that owes a request; False if none does."""
        if len(self._open) >= self.max_connections:
            oldest_waiting = next((c for c in self._open if c.waiting), None)
            if oldest_waiting is None:
                self.refused += 1
                return False
            self.evicted += 1
            self.forget(oldest_waiting)
            oldest_waiting.close()
        self._open[newcomer] = None
        return True

    def forget(self, connection: Connection) -> None:
        self._open.pop(connection, None)

    def live_seat(self) -> LiveSeat | None:
        """A seat for one more WebSocket or event stream, or None: `max_live` are served already."""
        if self.live >= self.max_live:
            self.refused_live += 1
            return None
        self.live += 1
        return LiveSeat(self)
