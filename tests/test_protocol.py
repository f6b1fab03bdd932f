"""The protocol's bounds at the door, fed bytes in-process: head limits (431, 414) and the lingering close."""

import asyncio
import json
from typing import Any

import pytest
import uvicorn
from starlette.types import Receive, Scope, Send

from app.door.connections import ConnectionGuard
from app.door.protocol import GuardedProtocol, HeadLimits, guarded
from app.settings import Settings

LIMITS = HeadLimits.of(Settings())
CHUNK = 64 * 1024  # what one read() of a socket hands the protocol at most, or near it


class FakeTransport(asyncio.Transport):
    """Records what the protocol writes and whether it closed, half-closed or paused."""

    def __init__(self) -> None:
        super().__init__()
        self.written = bytearray()
        self.closed = False
        self.eof_written = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.written += data

    def close(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed

    def can_write_eof(self) -> bool:
        return True

    def write_eof(self) -> None:
        self.eof_written = True

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"peername": ("127.0.0.1", 50000), "sockname": ("127.0.0.1", 8000)}.get(name, default)

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


async def answer_413_at_once(scope: Scope, receive: Receive, send: Send) -> None:
    """Like LabMiddleware on a declared length over the cap: answer without reading the body."""
    if scope["type"] != "http":
        return
    body = b'{"error":"body_too_large","detail":"x"}'
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": 413, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def connect(app: Any = answer_413_at_once, limits: HeadLimits = LIMITS) -> tuple[GuardedProtocol, FakeTransport]:
    guard = ConnectionGuard(request_timeout_s=30, max_connections=10, max_live=5)
    config = uvicorn.Config(app, lifespan="off", log_level="error")
    config.load()
    protocol_class = guarded(guard, limits)
    server_state = uvicorn.Server(config).server_state
    protocol = protocol_class(config=config, server_state=server_state, app_state={})
    transport = FakeTransport()
    protocol.connection_made(transport)
    return protocol, transport


def feed(protocol: GuardedProtocol, data: bytes) -> None:
    for start in range(0, len(data), CHUNK):
        protocol.data_received(data[start : start + CHUNK])


def status_and_body(transport: FakeTransport) -> tuple[int, dict[str, Any]]:
    head, _, body = bytes(transport.written).partition(b"\r\n\r\n")
    return int(head.split(b" ")[1]), json.loads(body)


async def test_one_header_of_a_mebibyte_gets_431_and_is_not_parsed_whole() -> None:
    protocol, transport = connect()
    request = b"GET /health HTTP/1.1\r\nhost: x\r\nx-big: " + b"a" * 2**20 + b"\r\n\r\n"
    feed(protocol, request[: LIMITS.request_line_bytes + LIMITS.header_bytes + CHUNK])
    status, body = status_and_body(transport)
    assert status == 431 and body["error"] == "headers_too_large", body
    written = len(transport.written)
    feed(protocol, request[LIMITS.request_line_bytes + LIMITS.header_bytes + CHUNK :])  # discarded, not parsed
    assert len(transport.written) == written
    assert transport.eof_written and not transport.closed  # the client reads the 431 while it still sends


async def test_ten_thousand_headers_get_431() -> None:
    protocol, transport = connect()
    fields = b"".join(b"x-%d: a\r\n" % i for i in range(10_000))
    feed(protocol, b"GET /health HTTP/1.1\r\nhost: x\r\n" + fields + b"\r\n")
    status, body = status_and_body(transport)
    assert status == 431 and body["error"] == "headers_too_large"


async def test_more_fields_than_the_count_limit_get_431_even_when_small() -> None:
    protocol, transport = connect()
    fields = b"".join(b"x: %d\r\n" % i for i in range(LIMITS.header_count + 1))
    assert len(fields) < LIMITS.header_bytes
    feed(protocol, b"GET /health HTTP/1.1\r\nhost: x\r\n" + fields + b"\r\n")
    status, body = status_and_body(transport)
    assert status == 431 and str(LIMITS.header_count) in body["detail"]


async def test_an_overlong_request_line_gets_414() -> None:
    protocol, transport = connect()
    feed(protocol, b"GET /health?q=" + b"a" * (LIMITS.request_line_bytes + 1) + b" HTTP/1.1\r\nhost: x\r\n\r\n")
    status, body = status_and_body(transport)
    assert status == 414 and body["error"] == "uri_too_long"


async def test_an_early_answer_lingers_until_the_body_is_read_then_closes_at_the_bound() -> None:
    protocol, transport = connect()
    size = 600_000
    feed(protocol, b"POST /p HTTP/1.1\r\nhost: x\r\nconnection: close\r\ncontent-length: %d\r\n\r\n" % size)
    for _ in range(100):  # the app runs as a task: give it turns until it has answered
        if transport.written:
            break
        await asyncio.sleep(0)
    assert status_and_body(transport)[0] == 413
    # Closing now would reset the connection under a client still sending its 600 KB.
    assert not transport.closed and transport.eof_written
    feed(protocol, b"a" * size)
    assert not transport.closed
    feed(protocol, b"a" * (LIMITS.linger_bytes - size + 1))  # past the bound: closed
    assert transport.closed


async def test_a_small_request_is_served_as_before() -> None:
    protocol, transport = connect()
    feed(protocol, b"POST /p HTTP/1.1\r\nhost: x\r\ncontent-length: 2\r\n" + b"x-a: b\r\n" * 50 + b"\r\n{}")
    for _ in range(100):
        if transport.written:
            break
        await asyncio.sleep(0)
    assert status_and_body(transport)[0] == 413  # the app's own answer, not a refusal at the door
    assert not transport.closed  # keep-alive: the next request may follow


@pytest.mark.parametrize("limit", [1, 3])
def test_live_connections_take_at_most_their_share(limit: int) -> None:
    guard = ConnectionGuard(request_timeout_s=1, max_connections=2 * limit, max_live=100)
    seats = [guard.live_seat() for _ in range(limit)]
    assert all(seats) and guard.live_seat() is None and guard.refused_live == 1
    seat = seats[0]
    assert seat is not None
    seat.release()
    seat.release()  # twice is once
    assert guard.live == limit - 1 and guard.live_seat() is not None
