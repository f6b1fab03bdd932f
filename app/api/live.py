"""Pushes the box's live state, the JSON of GET /api/stats, over a WebSocket about twice a second.

Why a WebSocket and not a faster poll: during a burst the page's own requests hold all six of the
browser's HTTP/1.1 connections to this host, so a poll of /api/stats waits behind them and the panel
freezes at the very moment students look at it. Chromium keeps WebSockets out of that pool of six
(measured in docs/burst-page.md), so one socket opened with the page keeps talking during any burst.
"""

import asyncio
import logging
from contextlib import suppress
from typing import Any

from fastapi import APIRouter, WebSocket
from fastapi.responses import JSONResponse
from starlette.websockets import WebSocketDisconnect

from app.api import info
from app.errors import WEBSOCKET_ONLY, error_body
from app.lab import Lab
from app.schema import ErrorOut

PUSH_EVERY_S = 0.5
GOING_AWAY = 1001  # RFC 6455: the server is going down; the page falls back to polling, then reconnects

router = APIRouter(tags=["info"])
log = logging.getLogger(__name__)


async def stats_body(lab: Lab) -> dict[str, Any]:
    """Exactly what GET /api/stats answers, from the same snapshots."""
    return await info.lab_stats(lab)


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
    """Sends one stats JSON text message every PUSH_EVERY_S until the page leaves or the box stops.

    The page sends nothing; reading is only how we learn that it went away.
    """
    await websocket.accept()
    pusher = asyncio.create_task(_push(websocket), name="stats-live-push")
    try:
        while (await websocket.receive())["type"] != "websocket.disconnect":
            pass
    finally:
        pusher.cancel()
        with suppress(asyncio.CancelledError):
            await pusher


async def _push(websocket: WebSocket) -> None:
    try:
        while (lab := getattr(websocket.app.state, "lab", None)) is not None:
            await websocket.send_json(await stats_body(lab))
            await asyncio.sleep(PUSH_EVERY_S)
        await websocket.close(code=GOING_AWAY)
    except (WebSocketDisconnect, RuntimeError, OSError) as exc:
        # The page left between two pushes (or the server is closing the socket): nothing to tell it.
        log.debug("live stats socket ended: %r", exc)
