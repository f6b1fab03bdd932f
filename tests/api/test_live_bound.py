"""The live stats sockets in-process: one stats snapshot per tick for all of them, and a bound on how many."""

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from starlette.websockets import WebSocketDisconnect

from app.main import create_app
from app.settings import Settings
from tests.fakes import GatedScorer


@pytest.fixture
def make_client(tmp_path: Path) -> Iterator[Any]:
    clients: list[TestClient] = []

    def make(**overrides: Any) -> TestClient:
        settings = Settings(**{"warmup": False, "job_store": f"sqlite:///{tmp_path / 'jobs.db'}", **overrides})
        client = TestClient(create_app(settings, GatedScorer(gated=False)))
        client.__enter__()
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.__exit__(None, None, None)


def test_many_sockets_share_one_snapshot_per_tick(make_client: Any) -> None:
    client = make_client()
    tickets = client.app.state.lab.paths["tickets"].service
    reads = {"n": 0}
    snapshot = tickets.snapshot

    async def counted_snapshot() -> Any:
        reads["n"] += 1
        return await snapshot()

    tickets.snapshot = counted_snapshot
    sockets, messages = 8, 3
    opened = [client.websocket_connect("/api/stats/live") for _ in range(sockets)]
    try:
        for socket in opened:
            socket.__enter__()
        for _ in range(messages):
            for socket in opened:
                assert "lane" in socket.receive_json()
    finally:
        for socket in opened:
            socket.__exit__(None, None, None)
    # One store read per tick, whoever listens: 8 sockets × 3 pushes read the store a handful of
    # times (the ticks those pushes span), not 24 times.
    assert reads["n"] <= messages + 2, reads


def test_past_the_live_bound_a_socket_is_closed_with_try_again_later(make_client: Any) -> None:
    client = make_client(max_live_connections=1)
    with client.websocket_connect("/api/stats/live") as first:
        assert "lane" in first.receive_json()
        with client.websocket_connect("/api/stats/live") as second, pytest.raises(WebSocketDisconnect) as closed:
            second.receive_json()
        assert (closed.value.code, closed.value.reason) == (1013, "too_many_connections")
        assert "lane" in first.receive_json()  # the one served goes on
    with client.websocket_connect("/api/stats/live") as again:  # its seat was given back
        assert "lane" in again.receive_json()


def test_an_event_stream_takes_a_live_seat_and_is_refused_past_the_bound(make_client: Any) -> None:
    client = make_client(max_live_connections=1)
    job_id = client.post("/api/queue/jobs", json={"text": "따라가기"}).json()["job_id"]
    held = client.app.state.connections.live_seat()  # a page's socket
    assert held is not None
    refused = client.get(f"/api/queue/events?job_id={job_id}")
    assert refused.status_code == 503, refused.text
    assert refused.json()["error"] == "too_many_connections" and refused.headers["retry-after"] == "5"
    assert client.get(f"/api/queue/jobs/{job_id}/events").status_code == 503
    held.release()
    followed = client.get(f"/api/queue/jobs/{job_id}/events")  # the job is done: the stream ends by itself
    assert followed.status_code == 200 and "event: status" in followed.text
    assert client.app.state.connections.live == 0  # given back when it ended
