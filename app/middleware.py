"""ASGI middleware: stamp arrival, cap body size, and count answers per prediction path."""

import json
import time

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app import metrics

# Only submissions count as prediction requests; polls of a ticket do not.
PREDICTION_ROUTES = {
    "/api/naive/predict": "naive",
    "/api/limited/predict": "limited",
    "/api/batched/predict": "batched",
    "/api/queue/jobs": "tickets",
}


class LabMiddleware:
    """One pass over every HTTP request, before any routing or body parsing."""

    def __init__(self, app: ASGIApp, *, max_body_bytes: int) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        # Measured before anything else so "wait" includes waiting for a server thread.
        scope.setdefault("state", {})["arrived_at"] = time.monotonic()
        path = PREDICTION_ROUTES.get(scope["path"]) if scope["method"] == "POST" else None
        if path is not None:
            send = self._counting(send, path)
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_body_bytes:
            await self._too_large(send)
            return
        await self.app(scope, self._capped(receive), send)

    def _capped(self, receive: Receive) -> Receive:
        seen = 0

        async def capped_receive() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_body_bytes:
                    raise BodyTooLarge(self.max_body_bytes)
            return message

        return capped_receive

    @staticmethod
    def _counting(send: Send, path: str) -> Send:
        async def counting_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                metrics.REQUESTS.labels(path, str(message["status"])).inc()
            await send(message)

        return counting_send

    async def _too_large(self, send: Send) -> None:
        body = json.dumps(
            {"error": "body_too_large", "detail": f"Request body over {self.max_body_bytes} bytes."}
        ).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 413,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
            }
        )
        await send({"type": "http.response.body", "body": body})


class BodyTooLarge(HTTPException):
    """A streamed body grew past the cap; FastAPI re-raises HTTPExceptions from body reading."""

    def __init__(self, limit: int) -> None:
        super().__init__(status_code=413, detail=f"Request body over {limit} bytes.")
