"""The bounds at the door against a real `python -m app.serve`: live sockets, request heads, refused bodies."""

import asyncio
import resource
import socket
import urllib.error
import urllib.request
from collections import Counter
from urllib.parse import urlsplit

import httpx
import psutil
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from kit.live import LiveServer, live_server, serving

# Starts a real server in a subprocess.
pytestmark = pytest.mark.slow

OPEN_FILES = 512  # the server's `ulimit -n`: 384 connections fit beside its 128 spare descriptors
WEBSOCKETS = 600  # more than the limit itself
GUARD_S = 60  # failure guards, never delays


def port_of(server: LiveServer) -> int:
    port = urlsplit(server.url).port
    assert port is not None
    return port


async def open_live_sockets(url: str, n: int) -> tuple[Counter[str], list[object]]:
    """Open n live-stats sockets at once; how each ended up (served, or closed with which code)."""
    outcomes: Counter[str] = Counter()
    served: list[object] = []
    gate = asyncio.Semaphore(100)  # connects in flight at once, as a crowd of pages would

    async def one() -> None:
        async with gate:
            try:
                websocket = await connect(url, open_timeout=GUARD_S, close_timeout=GUARD_S)
            except InvalidStatus as refused:
                outcomes[f"http {refused.response.status_code}"] += 1
                return
            except OSError as exc:
                outcomes[type(exc).__name__] += 1
                return
        try:
            await asyncio.wait_for(websocket.recv(), GUARD_S)
        except ConnectionClosed as closed:
            outcomes[f"closed {closed.rcvd.code if closed.rcvd else None}"] += 1
            return
        outcomes["served"] += 1
        served.append(websocket)

    await asyncio.gather(*(one() for _ in range(n)))
    return outcomes, served


def test_six_hundred_websockets_under_512_descriptors_leave_health_and_predictions_answering() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 2 * WEBSOCKETS:  # this test's own sockets
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 4096), hard))
    with serving({}, max_open_files=OPEN_FILES) as server:
        live_url = server.url.replace("http://", "ws://") + "/api/stats/live"

        async def scenario() -> tuple[Counter[str], int, int]:
            outcomes, served = await open_live_sockets(live_url, WEBSOCKETS)
            async with httpx.AsyncClient(base_url=server.url, timeout=GUARD_S) as client:
                health = await client.get("/health")
                prediction = await client.post("/api/limited/predict", json={"text": "빵이 맛있어요"})
            for websocket in served:
                await websocket.close()  # type: ignore[attr-defined]
            return outcomes, health.status_code, prediction.status_code

        outcomes, health, prediction = asyncio.run(scenario())
        log = server.log()
    assert (health, prediction) == (200, 200), outcomes
    # Half of the 384 connections that fit are for live sockets; every other page is told to poll.
    assert outcomes["served"] == (OPEN_FILES - 128) // 2, outcomes
    assert outcomes["closed 1013"] == WEBSOCKETS - outcomes["served"], outcomes
    assert "Too many open files" not in log


def rss_bytes(server: LiveServer) -> int:
    return int(psutil.Process(server.process.pid).memory_info().rss)


def send_head(port: int, head: bytes) -> bytes:
    """Send a whole request head, then read the answer's first line and body."""
    with socket.create_connection(("127.0.0.1", port), timeout=GUARD_S) as sock:
        sock.sendall(head)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    return answer


def test_a_mebibyte_header_gets_431_and_the_server_does_not_grow() -> None:
    with live_server() as server:
        port = port_of(server)
        before = rss_bytes(server)
        big = b"GET /health HTTP/1.1\r\nhost: x\r\nx-big: " + b"a" * 2**20 + b"\r\n\r\n"
        answers = [send_head(port, big) for _ in range(8)]
        many = b"GET /health HTTP/1.1\r\nhost: x\r\n" + b"".join(b"x-%d: a\r\n" % i for i in range(10_000)) + b"\r\n"
        answers.append(send_head(port, many))
        grown = rss_bytes(server) - before
        health = httpx.get(f"{server.url}/health", timeout=GUARD_S)
    for answer in answers:
        assert answer.startswith(b"HTTP/1.1 431 "), answer[:200]
        assert b'"error": "headers_too_large"' in answer
    assert grown <= 10 * 2**20, f"RSS grew by {grown / 2**20:.1f} MiB"
    assert health.status_code == 200


def test_an_oversize_body_from_urllib_is_always_answered_413() -> None:
    outcomes: Counter[str] = Counter()
    with live_server() as server:
        for _ in range(100):
            request = urllib.request.Request(
                f"{server.url}/api/limited/predict", data=b"x" * 600_000, headers={"content-type": "application/json"}
            )
            try:
                urllib.request.urlopen(request, timeout=GUARD_S)
                outcomes["2xx"] += 1
            except urllib.error.HTTPError as answer:
                outcomes[str(answer.code)] += 1
            except urllib.error.URLError as failed:
                outcomes[type(failed.reason).__name__] += 1
    assert outcomes == Counter({"413": 100}), outcomes
