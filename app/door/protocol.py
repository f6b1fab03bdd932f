"""uvicorn's httptools protocol with the lab's bounds at the door: a request deadline, the connection
guard (app/door/connections.py), limits on a request's head, and a lingering close after an early answer.

httptools has no limit on a request's head: a 50 MiB header was read whole and answered 200, and
eight of them lifted the server by 370 MB. So the head's bytes are counted as they
arrive and the parser is fed no further once the bound is passed. An answer sent before the client
has finished sending (413 on a declared length, 431, 414) is followed by reading and discarding what
it still sends, up to `linger_bytes` or `linger_s`, before closing: closing at once would reset the
connection, and a client that sends its whole body first (urllib, requests) would see a broken pipe
instead of the answer (nginx's lingering close).
"""

import asyncio
from dataclasses import dataclass
from typing import Any, ClassVar

import httptools
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol

from app.door.connections import REFUSAL, ConnectionGuard, raw_answer
from app.errors import HEADERS_TOO_LARGE, URI_TOO_LONG, ErrorKind
from app.settings import Settings

__all__ = ["GuardedProtocol", "GuardedWebSockets", "HeadLimits", "guarded"]


@dataclass(frozen=True, slots=True)
class HeadLimits:
    request_line_bytes: int
    header_bytes: int
    header_count: int
    linger_bytes: int
    linger_s: float

    @classmethod
    def of(cls, settings: Settings) -> "HeadLimits":
        return cls(
            settings.max_request_line_bytes,
            settings.max_header_bytes,
            settings.max_header_count,
            settings.linger_bytes,
            settings.linger_s,
        )


class _HeadRefused(Exception):
    """Raised from a parser callback to stop parsing: the head broke a limit."""


class _LingeringTransport:
    """What a request's cycle sees as its transport: its close() lingers while the request is unfinished."""

    def __init__(self, protocol: "GuardedProtocol") -> None:
        self._protocol = protocol

    def write(self, data: bytes) -> None:
        self._protocol.transport.write(data)

    def is_closing(self) -> bool:
        return self._protocol.transport.is_closing()

    def close(self) -> None:
        self._protocol.close_lingering()


class GuardedProtocol(HttpToolsProtocol):
    """Armed exactly while a request is awaited; counted by the guard until the socket closes, upgraded or not."""

    guard: ClassVar[ConnectionGuard]
    limits: ClassVar[HeadLimits]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deadline: asyncio.TimerHandle | None = None
        self._in_head = True  # the current request's head is not complete yet
        self._head_bytes = 0  # bytes received while in the head (a chunk's tail may be body: an upper bound)
        self._header_bytes = 0  # names and values of the fields parsed so far
        self._message_done = True  # no request body still owed by the client
        self._refusal: tuple[ErrorKind, str] | None = None
        self._linger_left: int | None = None  # bytes still to discard; None while not lingering

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

    def data_received(self, data: bytes) -> None:
        if self._linger_left is not None:
            self._linger_left -= len(data)
            if self._linger_left <= 0:
                self.transport.close()
            return
        self._unset_keepalive_if_required()
        if self._in_head:
            self._head_bytes += len(data)
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            if self._should_upgrade():
                self.handle_websocket_upgrade()
            else:
                self._unsupported_upgrade_warning()
            return
        except httptools.HttpParserError:
            if self._refusal is None:
                self.logger.warning("Invalid HTTP request received.")
                self.send_400_response("Invalid HTTP request received.")
                return
        limits = self.limits
        if (
            self._refusal is None
            and self._in_head
            and self._head_bytes > limits.request_line_bytes + limits.header_bytes
        ):
            self._refusal = self._head_too_big()
        if self._refusal is not None:
            self._refuse(*self._refusal)

    def _head_too_big(self) -> tuple[ErrorKind, str]:
        if len(getattr(self, "url", b"")) > self.limits.request_line_bytes:
            return URI_TOO_LONG, f"The request line is over {self.limits.request_line_bytes} bytes."
        return HEADERS_TOO_LARGE, f"The header fields are over {self.limits.header_bytes} bytes in all."

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._in_head, self._message_done, self._header_bytes = True, False, 0

    def on_url(self, url: bytes) -> None:
        super().on_url(url)
        if len(self.url) > self.limits.request_line_bytes:
            self._refusal = (URI_TOO_LONG, f"The request line is over {self.limits.request_line_bytes} bytes.")
            raise _HeadRefused

    def on_header(self, name: bytes, value: bytes) -> None:
        super().on_header(name, value)
        self._header_bytes += len(name) + len(value)
        if len(self.headers) > self.limits.header_count:
            self._refusal = (HEADERS_TOO_LARGE, f"More than {self.limits.header_count} header fields.")
            raise _HeadRefused
        if self._header_bytes > self.limits.header_bytes:
            self._refusal = (HEADERS_TOO_LARGE, f"The header fields are over {self.limits.header_bytes} bytes in all.")
            raise _HeadRefused

    def on_headers_complete(self) -> None:
        self._in_head, self._head_bytes = False, 0
        super().on_headers_complete()
        if self.cycle is not None:
            self.cycle.transport = _LingeringTransport(self)  # type: ignore[assignment]

    def on_message_complete(self) -> None:
        self._disarm()  # the whole request is here; answering it may take as long as it takes
        self._in_head, self._message_done = True, True
        super().on_message_complete()

    def on_response_complete(self) -> None:
        idle_next = not self.pipeline  # else a request already received starts now
        super().on_response_complete()
        if idle_next and not self.transport.is_closing() and self._linger_left is None:
            self._arm()

    def handle_websocket_upgrade(self) -> None:
        self._disarm()  # a WebSocket is another protocol from here on, outside the deadline, still counted
        super().handle_websocket_upgrade()
        websocket = self.transport.get_protocol()
        if isinstance(websocket, GuardedWebSockets):
            websocket.upgraded_from = self
        else:  # another WebSocket implementation: nothing would tell the guard it closed
            self.guard.forget(self)

    def websocket_closed(self) -> None:
        self.guard.forget(self)

    def close(self) -> None:
        self._disarm()
        self.guard.forget(self)
        self.transport.close()

    def close_lingering(self, *, mid_request: bool = False) -> None:
        """Close now if the client has sent its whole request; else first discard what it still sends, within bounds."""
        if self.transport.is_closing():
            return
        if self._message_done and not mid_request:
            self.transport.close()
            return
        self._disarm()
        self._linger_left = self.limits.linger_bytes
        self.flow.resume_reading()
        if self.transport.can_write_eof():
            self.transport.write_eof()  # the answer is whole: the client may read it while still sending
        self.loop.call_later(self.limits.linger_s, self.transport.close)

    def _refuse(self, kind: ErrorKind, detail: str) -> None:
        self._refusal = None
        self.transport.write(raw_answer(kind, detail))
        self.close_lingering(mid_request=True)

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


class GuardedWebSockets(WebSocketsSansIOProtocol):
    """uvicorn's WebSocket protocol that tells the connection it was upgraded from when the socket closes."""

    upgraded_from: GuardedProtocol | None = None

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        if self.upgraded_from is not None:
            self.upgraded_from.websocket_closed()
            self.upgraded_from = None


def guarded(guard: ConnectionGuard, limits: HeadLimits) -> type[GuardedProtocol]:
    """The protocol class for `uvicorn.Config(http=...)`, bound to one server's guard and limits."""
    return type("LabProtocol", (GuardedProtocol,), {"guard": guard, "limits": limits})
