"""ASGI middleware: stamp arrival, cap body size, count answers per prediction path, answer 500s."""

import json
import logging
import time
from collections.abc import Callable, Mapping

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.errors import BODY_TOO_LARGE, INTERNAL, ErrorKind, error_body
from app.lesson.entry import Entry
from app.lesson.record import LessonRecord
from app.observe.metrics import RequestTally

log = logging.getLogger(__name__)


class LabMiddleware:
    """One pass over every HTTP request, before any routing or body parsing.

    A handler's unexpected exception is answered here, inside the counter, so a 500 is counted
    like any other answer and has the one error shape; it is re-raised for the server's log.
    The same submissions are entered in the lesson's record (the class view), at arrival and at the answer's end.
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        max_body_bytes: int,
        requests: RequestTally,
        routes: Callable[[], Mapping[str, str]],
        lesson: Callable[[], LessonRecord | None] = lambda: None,
    ) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes
        self.requests = requests
        self.routes = routes  # submitting route → path name, from the running lab's paths
        self.lesson = lesson

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        # Measured before anything else so "wait" includes waiting for a server thread.
        scope.setdefault("state", {})["arrived_at"] = time.monotonic()
        # Only submissions count as prediction requests; polls of a ticket do not.
        path = self.routes().get(scope["path"]) if scope["method"] == "POST" else None
        if path is None:
            await self._answer(scope, receive, send)
            return
        record = self.lesson()
        entry = None if record is None else record.arrive(scope, path)
        try:
            await self._answer(scope, receive, self._counting(send, path, scope, record, entry))
        finally:
            if record is not None and entry is not None:
                record.ended(entry)

    async def _answer(self, scope: Scope, receive: Receive, send: Send) -> None:
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_body_bytes:
            await answer(send, BODY_TOO_LARGE, f"Request body over {self.max_body_bytes} bytes.")
            return
        started = False

        async def watching_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, self._capped(receive), watching_send)
        except Exception:
            if not started:
                await answer(send, INTERNAL, "The lab failed on this request; the server log says why.")
            raise

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

    def _counting(self, send: Send, path: str, scope: Scope, record: LessonRecord | None, entry: Entry | None) -> Send:
        async def counting_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                self.requests.count(path, message["status"])
                if record is not None and entry is not None:
                    record.answer_started(entry, message, scope)
            await send(message)

        return counting_send


async def answer(send: Send, kind: ErrorKind, detail: str) -> None:
    body = json.dumps(error_body(kind, detail)).encode()
    await send(
        {
            "type": "http.response.start",
            "status": kind.status,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})


class BodyTooLarge(HTTPException):
    """A streamed body grew past the cap; FastAPI re-raises HTTPExceptions from body reading."""

    def __init__(self, limit: int) -> None:
        super().__init__(status_code=413, detail=f"Request body over {limit} bytes.")
