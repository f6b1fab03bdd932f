"""Slow and silent clients (real HTTP, `python -m app.serve`): each socket owes a whole request within
LAB_REQUEST_TIMEOUT_S, and the open connections stay under the open-file limit, so /health answers."""

import socket
import time
from urllib.parse import urlsplit

import httpx
import pytest

from kit.live import serving
from kit.sockets import closed_times

# Starts a real server in a subprocess.
pytestmark = pytest.mark.slow

OPEN_FILES = 256  # the server's `ulimit -n`; app.serve fits its connection cap under it (128 here)
SOCKETS = 300  # more than the cap, and more than the limit itself: without a cap accept() fails


def open_slow_sockets(port: int, n: int) -> list[socket.socket]:
    """Half send the start of a request line and stop, half send nothing at all."""
    sockets = []
    for i in range(n):
        sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        if i % 2:
            sock.sendall(b"GET /hea")
        sockets.append(sock)
    return sockets


def test_slow_and_silent_sockets_are_closed_and_health_answers_meanwhile() -> None:
    settings = {"LAB_REQUEST_TIMEOUT_S": "2", "LAB_MAX_CONNECTIONS": "1000"}
    with serving(settings, max_open_files=OPEN_FILES) as server:
        port = urlsplit(server.url).port
        assert port is not None
        sockets = open_slow_sockets(port, SOCKETS)
        try:
            health = httpx.get(f"{server.url}/health", timeout=10)
            opened_at = time.monotonic()
            still_open = len(sockets) - len(closed_times(sockets, opened_at, limit_s=60))  # a failure guard
            after = httpx.get(f"{server.url}/health", timeout=10)
        finally:
            for sock in sockets:
                sock.close()
        log = server.log()
    assert health.status_code == 200, health.text
    assert still_open == 0, f"{still_open} of {SOCKETS} sockets never closed by the server"
    assert after.status_code == 200
    assert "Too many open files" not in log, log
