"""A webhook receiver on 127.0.0.1 for tests and tools: records each POST and answers as it is told.

`done_job` makes a finished job that owes a webhook to a given URL.
"""

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from app.jobs.models import Job, JobStatus, WebhookState


@dataclass
class Delivery:
    headers: dict[str, str]
    body: bytes


@dataclass
class WebhookReceiver:
    port: int = 0
    # Statuses to answer, in order; once used up, every delivery gets 200.
    answers: list[int] = field(default_factory=list)
    deliveries: list[Delivery] = field(default_factory=list)
    _arrived: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    async def wait_for(self, count: int, limit_s: float = 10.0) -> list[Delivery]:
        """Until `count` deliveries arrived (a failure guard, not a delay)."""
        async with asyncio.timeout(limit_s):
            while len(self.deliveries) < count:
                self._arrived.clear()
                await self._arrived.wait()
        return self.deliveries

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")[1:]
        headers = {k.strip().lower(): v.strip() for k, v in (line.split(":", 1) for line in lines if ":" in line)}
        body = await reader.readexactly(int(headers.get("content-length", "0")))
        self.deliveries.append(Delivery(headers, body))
        self._arrived.set()
        status = self.answers.pop(0) if self.answers else 200
        writer.write(f"HTTP/1.1 {status} X\r\ncontent-length: 0\r\nconnection: close\r\n\r\n".encode())
        await writer.drain()
        writer.close()


@asynccontextmanager
async def webhook_receiver(answers: list[int] | None = None) -> AsyncIterator[WebhookReceiver]:
    receiver = WebhookReceiver(answers=list(answers or []))
    server = await asyncio.start_server(receiver._handle, "127.0.0.1", 0)
    receiver.port = server.sockets[0].getsockname()[1]
    async with server:
        yield receiver


@dataclass
class SilentReceiver:
    """Reads each webhook POST and never answers (until the test ends): the receiver that once
    held up every other client's webhook behind its timeouts."""

    port: int = 0
    received: int = 0
    open_now: int = 0
    most_open: int = 0
    _hang_up: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/slow"

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.open_now += 1
        self.most_open = max(self.most_open, self.open_now)
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            length = next(
                (
                    int(line.split(b":", 1)[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length")
                ),
                0,
            )
            await reader.readexactly(length)
            self.received += 1
            await self._hang_up.wait()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass  # the sender gave up first
        finally:
            self.open_now -= 1
            writer.close()


@asynccontextmanager
async def silent_receiver() -> AsyncIterator[SilentReceiver]:
    receiver = SilentReceiver()
    server = await asyncio.start_server(receiver._handle, "127.0.0.1", 0)
    receiver.port = server.sockets[0].getsockname()[1]
    try:
        async with server:
            yield receiver
    finally:
        receiver._hang_up.set()


def done_job(url: str, i: int) -> Job:
    now = time.time()
    return Job(
        text=f"리뷰 {i}",
        status=JobStatus.DONE,
        finished_at=now,
        webhook_url=url,
        webhook_state=WebhookState.PENDING,
        webhook_next_at=now - 100 + i,  # the slow ones are due first
    )
