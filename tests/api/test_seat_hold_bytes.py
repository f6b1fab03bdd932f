"""A `Seat-Hold` header with bytes outside printable ASCII is a 422 in the one error shape: the header is a
client's word, and comparing its MAC must never fail as a 500. Sent as raw bytes: httpx's str headers cannot
carry them."""

import asyncio
import json
import socket
from typing import Any

import pytest
from asgi_lifespan import LifespanManager
from starlette.types import ASGIApp, Message

from app.main import create_app
from app.paths.holds import HoldCheck, SeatHolds
from app.settings import Settings
from kit.live import live_server
from tests.fakes import GatedScorer

NOT_ASCII = [b"\xff", "\u00e9".encode("latin-1"), "\u00e9".encode(), b"abc.def\x80", b"\x80.\x80", b"tok\xa0en"]
BODY = json.dumps({"text": "빵이 맛있어요"}).encode()


async def post_raw(app: ASGIApp, seat_hold: bytes) -> tuple[int, dict[str, Any]]:
    """POST /api/limited/predict through the ASGI scope itself, the header as the bytes a socket would carry."""
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/api/limited/predict",
        "raw_path": b"/api/limited/predict",
        "query_string": b"",
        "root_path": "",
        "headers": [
            (b"host", b"lab"),
            (b"content-type", b"application/json"),
            (b"content-length", str(len(BODY)).encode()),
            (b"seat-hold", seat_hold),
        ],
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 80),
    }
    sent: list[Message] = []
    delivered = asyncio.Event()

    async def receive() -> Message:
        if not delivered.is_set():
            delivered.set()
            return {"type": "http.request", "body": BODY, "more_body": False}
        await asyncio.Event().wait()  # the client stays; nothing more to read
        raise AssertionError("unreachable")

    async def send(message: Message) -> None:
        sent.append(message)

    await app(scope, receive, send)
    status = next(m["status"] for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return status, json.loads(body)


@pytest.mark.parametrize("value", NOT_ASCII)
async def test_a_seat_hold_with_bytes_outside_ascii_is_a_422(value: bytes) -> None:
    scorer = GatedScorer(gated=False)
    app = create_app(Settings(warmup=False, job_store="memory://", knobs_file=None), scorer)
    async with LifespanManager(app) as manager:
        status, body = await post_raw(manager.app, value)
        ascii_status, _ = await post_raw(manager.app, b"made-up.token")  # a forged ASCII token: a walk-in
    assert status == 422 and body["error"] == "invalid_request", body
    assert body["fields"][0]["loc"] == ["header", "seat-hold"] and set(body) == {"error", "detail", "fields"}
    assert ascii_status == 200 and len(scorer.calls) == 1  # only the walk-in reached the model


@pytest.mark.parametrize("token", ["\u00ff", "abc.d\u00e9f", "\u00e9.\u00e9", "\U0001f44d.x"])
def test_the_holds_call_a_token_with_characters_outside_ascii_forged(token: str) -> None:
    holds = SeatHolds(grace_s=3, horizon_reviews=15)
    assert holds.check(token)[0] is HoldCheck.FORGED


@pytest.mark.slow
def test_over_a_real_socket_the_bytes_get_a_422_and_the_box_serves_on() -> None:
    with live_server() as server:
        host, port = server.url.removeprefix("http://").split(":")
        answers = []
        for value in (b"\xff", b"abc.def\xe9"):
            request = (
                b"POST /api/limited/predict HTTP/1.1\r\nHost: lab\r\nContent-Type: application/json\r\n"
                + b"Content-Length: "
                + str(len(BODY)).encode()
                + b"\r\nSeat-Hold: "
                + value
                + b"\r\nConnection: close\r\n\r\n"
                + BODY
            )
            with socket.create_connection((host, int(port)), timeout=30) as conn:
                conn.sendall(request)
                received = b""
                while chunk := conn.recv(65536):
                    received += chunk
            answers.append(received)
        log = server.log()
    for answer in answers:
        head, _, body = answer.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 422 "), head
        assert json.loads(body)["error"] == "invalid_request"
    assert "Traceback" not in log
