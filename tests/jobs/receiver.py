"""A webhook receiver on 127.0.0.1 for tests: records each POST and answers the statuses it is told."""

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field


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
