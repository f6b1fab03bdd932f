"""The box's port: refused at once while an incarnation starts, served once it has started; one box per port."""

import asyncio
import errno
import os
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
import uvicorn
from starlette.types import Receive, Scope, Send

from app.box.port import bound_socket, claim_port, hold_port
from kit.serverproc import free_port


class GatedStart:
    """An ASGI app whose start-up (lifespan) waits for `go`, as an incarnation's waits for its model."""

    def __init__(self) -> None:
        self.starting = asyncio.Event()
        self.go = asyncio.Event()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                self.starting.set()
                await self.go.wait()
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
        await send({"type": "http.response.body", "body": b"ok"})


class Started(uvicorn.Server):
    """uvicorn's server (as `python -m app.serve --fd` runs it) that says when its start-up is over."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.serving = asyncio.Event()

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        self.serving.set()


@asynccontextmanager
async def incarnation(sock: socket.socket, app: GatedStart) -> AsyncIterator[Started]:
    config = uvicorn.Config(app, fd=sock.fileno(), lifespan="on", log_level="warning")
    server = Started(config)
    task = asyncio.create_task(server.serve())
    try:
        yield server
    finally:
        app.go.set()
        server.should_exit = True
        await asyncio.wait_for(task, timeout=30)  # a failure guard


async def get(port: int) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"GET / HTTP/1.1\r\nhost: box\r\nconnection: close\r\n\r\n")
    await writer.drain()
    answer = await reader.read()
    writer.close()
    return answer


async def test_a_client_is_refused_while_the_incarnation_starts_and_served_once_it_has() -> None:
    """Nothing waits in a backlog for the model to load: nothing reaches the new incarnation as one crowd."""
    sock = bound_socket("127.0.0.1", 0)
    port = sock.getsockname()[1]
    app = GatedStart()
    async with incarnation(sock, app) as server:
        await asyncio.wait_for(app.starting.wait(), timeout=30)
        for _ in range(3):
            with pytest.raises(ConnectionRefusedError):
                await asyncio.open_connection("127.0.0.1", port)  # not held in a backlog: refused now
        app.go.set()
        await asyncio.wait_for(server.serving.wait(), timeout=30)
        assert (await get(port)).startswith(b"HTTP/1.1 200")
    sock.close()


def test_a_second_box_on_the_port_is_refused_even_while_the_first_still_starts() -> None:
    """The first box's socket does not listen yet, so only its lock keeps a second box off the port."""
    port = free_port()
    lock, sock = claim_port("127.0.0.1", port)
    try:
        with pytest.raises(OSError) as raised:
            claim_port("127.0.0.1", port)
        assert raised.value.errno == errno.EADDRINUSE and "in use" in str(raised.value.strerror)
        sock.close()  # between two incarnations: the lock alone
        with pytest.raises(OSError):
            claim_port("127.0.0.1", port)
    finally:
        os.close(lock)
    os.close(hold_port(port))  # given back with its descriptor


def test_a_port_a_server_listens_on_is_in_use_and_a_failed_claim_keeps_no_lock() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(OSError) as raised:
            claim_port("127.0.0.1", port)
        assert raised.value.errno == errno.EADDRINUSE
    lock, sock = claim_port("127.0.0.1", port)
    sock.close()
    os.close(lock)
