"""The live stats socket against a real server: it keeps pushing what GET /api/stats answers."""

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from websockets.sync.client import ClientConnection, connect

from kit.live import LiveServer, live_server

pytestmark = pytest.mark.slow
GUARD_S = 15  # a failure guard on each receive, never a delay


@pytest.fixture(scope="module")
def server() -> Iterator[LiveServer]:
    with live_server() as running:
        yield running


def open_live(server: LiveServer) -> ClientConnection:
    return connect(server.url.replace("http://", "ws://") + "/api/stats/live", open_timeout=GUARD_S)


def receive(socket: ClientConnection) -> dict[str, Any]:
    message: dict[str, Any] = json.loads(socket.recv(timeout=GUARD_S))
    return message


def test_pushes_the_json_of_get_stats_again_and_again(server: LiveServer) -> None:
    with open_live(server) as socket:
        pushed = receive(socket)
        polled = httpx.get(f"{server.url}/api/stats").json()
        assert pushed.keys() == polled.keys()
        assert pushed["paths"] == polled["paths"] and pushed["cache"] == polled["cache"]
        before = pushed["cache"]["misses"]
        answer = httpx.post(
            f"{server.url}/api/naive/predict", json={"text": "라이브 소켓 확인용 리뷰"}, timeout=GUARD_S
        )
        assert answer.status_code == 200
        # The socket is not a one-shot: a later push shows the inference that happened after it opened.
        # Pushes already on the way may predate it; one of the next few must show it.
        misses = [receive(socket)["cache"]["misses"] for _ in range(10)]
        assert before + 1 in misses, misses


def test_a_plain_get_is_told_to_open_a_websocket(server: LiveServer) -> None:
    answer = httpx.get(f"{server.url}/api/stats/live")
    assert answer.status_code == 426 and answer.headers["upgrade"] == "websocket"
    assert answer.json()["error"] == "websocket_only" and "GET /api/stats" in answer.json()["detail"]


def test_a_page_that_leaves_does_not_disturb_the_next(server: LiveServer) -> None:
    with open_live(server) as first:
        receive(first)
    with open_live(server) as second:
        assert receive(second)["lane"]["busy"] in (True, False)
        receive(second)
    assert httpx.get(f"{server.url}/health").status_code == 200
