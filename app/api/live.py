"""Pushes the box's live state, the JSON of GET /api/stats, over a WebSocket about twice a second.

Why a WebSocket and not a faster poll: during a burst the page's own requests hold all six of the
browser's HTTP/1.1 connections to this host, so a poll of /api/stats waits behind them and the panel
freezes at the very moment students look at it. Chromium keeps WebSockets out of that pool of six
(measured in docs/burst-page.md), so one socket opened with the page keeps talking during any burst.

Every socket sends the same text, built once per tick (app/observe/fanout.py), and takes a live seat from
the connection guard (app/door/connections.py): past `max_live` sockets, a newcomer is closed with 1013
and the page polls GET /api/stats instead.
"""

import asyncio
import json
import logging
from contextlib import suppress
from typing import Any

from fastapi import APIRouter, FastAPI, WebSocket
from fastapi.responses import JSONResponse
from starlette.websockets import WebSocketDisconnect

from app.api import info
from app.contract.schema import ErrorOut
from app.door.connections import TRY_AGAIN_LATER, ConnectionGuard
from app.errors import WEBSOCKET_ONLY, error_body
from app.lab import Lab
from app.observe.fanout import Ticker

PUSH_EVERY_S = 0.5
GOING_AWAY = 1001  # RFC 6455: the server is going down; the page falls back to polling, then reconnects
FULL_REASON = "too_many_connections"  # the close reason with TRY_AGAIN_LATER (at most 123 bytes)

router = APIRouter(tags=["info"])
log = logging.getLogger(__name__)


async def stats_body(lab: Lab) -> dict[str, Any]:
    """Exactly what GET /api/stats answers, from the same snapshots."""
    return await info.lab_stats(lab)


def stats_ticker(app: FastAPI) -> Ticker:
    """The app's one builder of the live stats text; None once the lab is gone (the sockets then close)."""

    async def build() -> str | None:
        lab: Lab | None = getattr(app.state, "lab", None)
        if lab is None:
            return None
        return json.dumps(await stats_body(lab), separators=(",", ":"), ensure_ascii=False)

    return Ticker(build, PUSH_EVERY_S)


@router.get(
    "/api/stats/live",
    status_code=WEBSOCKET_ONLY.status,
    summary="Live stats: open this address as a WebSocket (ws://…); a plain GET answers 426",
    responses={WEBSOCKET_ONLY.status: {"model": ErrorOut, "description": "Not a WebSocket handshake"}},
)
async def stats_live_over_http() -> JSONResponse:
    """A student who clicks the address gets told what it is, in the one error shape, instead of a bare 404."""
    detail = (
        f"Open /api/stats/live as a WebSocket: it sends the JSON of GET /api/stats every {PUSH_EVERY_S:g} s. "
        "GET /api/stats answers the same JSON once."
    )
    return JSONResponse(
        error_body(WEBSOCKET_ONLY, detail), status_code=WEBSOCKET_ONLY.status, headers={"Upgrade": "websocket"}
    )


@router.websocket("/api/stats/live")
async def stats_live(websocket: WebSocket) -> None:
    """Sends the latest stats JSON text every PUSH_EVERY_S until the page leaves or the box stops.

    The page sends nothing; reading is only how we learn that it went away (and drops what it sends).
    """
    guard: ConnectionGuard = websocket.app.state.connections
    seat = guard.live_seat()
    await websocket.accept()
    if seat is None:
        await websocket.close(code=TRY_AGAIN_LATER, reason=FULL_REASON)
        return
    pusher = asyncio.create_task(_push(websocket, websocket.app.state.live_stats), name="stats-live-push")
    try:
        while (await websocket.receive())["type"] != "websocket.disconnect":
            pass
    finally:
        seat.release()
        pusher.cancel()
        with suppress(asyncio.CancelledError):
            await pusher


async def _push(websocket: WebSocket, ticker: Ticker) -> None:
    try:
        async with ticker.subscribed() as tick:
            while True:
                tick, text = await ticker.next(tick)
                if text is None:
                    break
                await websocket.send_text(text)
        await websocket.close(code=GOING_AWAY)
    except (WebSocketDisconnect, RuntimeError, OSError) as exc:
        # The page left between two pushes (or the server is closing the socket): nothing to tell it.
        log.debug("live stats socket ended: %r", exc)
