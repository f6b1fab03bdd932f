"""Slow and idle clients: a deadline for each whole request to arrive, and a cap on open connections.

uvicorn closes a connection only when it sits idle after an answer (`--timeout-keep-alive`, and
any byte resets that timer): a socket that sends half a request line, or nothing, is kept
forever, and 1,100 of them made /health fail under a 1,024 open-file limit.
`--limit-concurrency` does not help: it counts those sockets too, and answers every real request
503 once they reach it. So each connection here must deliver a whole request within
`request_timeout_s` of connecting or of its previous answer, and at `max_connections` the oldest
connection still waiting for a request is closed to make room for the newcomer.
"""

import asyncio
import json
from typing import Any, ClassVar, Protocol

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from app.errors import TOO_MANY_CONNECTIONS, error_body

__all__ = ["Connection", "ConnectionGuard", "GuardedProtocol", "guarded"]


def _refusal() -> bytes:
    body = json.dumps(error_body(TOO_MANY_CONNECTIONS, "Every connection this box allows is busy; retry shortly."))
    head = (
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nretry-after: 1\r\n"
        f"connection: close\r\ncontent-length: {len(body)}\r\n\r\n"
    )
    return (head + body).encode()


REFUSAL = _refusal()


class Connection(Protocol):
    @property
    def waiting(self) -> bool: ...

    def close(self) -> None: ...


class ConnectionGuard:
    """One per server: its open connections, oldest first, the two limits, and what they did."""

    def __init__(self, *, request_timeout_s: float, max_connections: int) -> None:
        self.request_timeout_s = request_timeout_s
        self.max_connections = max_connections
        self._open: dict[Connection, None] = {}  # a dict keeps arrival order
        self.timed_out = 0  # closed: no whole request within the deadline
        self.evicted = 0  # closed to make room: the oldest still waiting for a request
        self.refused = 0  # newcomers answered 503: every open connection had a request in progress

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


class GuardedProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with a request deadline; armed exactly while a request is awaited."""

    guard: ClassVar[ConnectionGuard]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deadline: asyncio.TimerHandle | None = None

    @property
    def waiting(self) -> bool:
        """No request in progress: the client owes us a whole request (the first, or the next one)."""
        return self._deadline is not None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if not self.guard.admit(self):
            transport.write(REFUSAL)
            transport.close()
            return
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        self.guard.forget(self)
        super().connection_lost(exc)

    def on_message_complete(self) -> None:
        self._disarm()  # the whole request is here; answering it may take as long as it takes
        super().on_message_complete()

    def on_response_complete(self) -> None:
        idle_next = not self.pipeline  # else a request already received starts now
        super().on_response_complete()
        if idle_next and not self.transport.is_closing():
            self._arm()

    def handle_websocket_upgrade(self) -> None:
        self._disarm()  # a WebSocket is another protocol from here on, outside the deadline and the cap
        self.guard.forget(self)
        super().handle_websocket_upgrade()

    def close(self) -> None:
        self._disarm()
        self.guard.forget(self)
        self.transport.close()

    def _arm(self) -> None:
        if self._deadline is None:
            self._deadline = self.loop.call_later(self.guard.request_timeout_s, self._too_slow)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _too_slow(self) -> None:
        self._deadline = None
        self.guard.timed_out += 1
        self.close()


def guarded(guard: ConnectionGuard) -> type[GuardedProtocol]:
    """The protocol class for `uvicorn.Config(http=...)`, bound to one server's guard."""
    return type("LabProtocol", (GuardedProtocol,), {"guard": guard})
