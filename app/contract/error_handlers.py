"""Turns every error, the lab's and the framework's, into the one shape of app/errors.py.

Validation (422), routing (404, 405) and body reading (400, 413) come from FastAPI and
Starlette with their own bodies; the handlers here rewrite them, so a client parses one shape.
A 500 is answered by LabMiddleware (inside the request counter), not here.
"""

import json
import math
import re
from http import HTTPStatus
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from app.contract.responses import server_timing
from app.errors import BY_STATUS, INVALID_REQUEST, ErrorKind, LabError, error_body, retry_after_header

# The request's state key under which each handler notes the error it answered, (code, reason): the class view's
# record of the request reads it (app/lesson/entry.py), so nothing parses an error body again.
NOTED_ERROR = "lab_error"


def finite(value: Any) -> Any:
    """`value` with every NaN or infinity replaced by its name: JSON has no such numbers, and an
    echo of what a client sent (`1e400` parses to infinity) must never turn a 422 into a 500."""
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    if isinstance(value, dict):
        return {str(k): finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite(v) for v in value]
    return value


class SafeJSONResponse(JSONResponse):
    """FastAPI's JSON rendering (same bytes), except that it never fails on a non-finite float."""

    def render(self, content: Any) -> bytes:
        return json.dumps(
            finite(content), ensure_ascii=False, allow_nan=False, indent=None, separators=(",", ":")
        ).encode("utf-8")


def error_response(exc: LabError) -> JSONResponse:
    headers = dict(exc.headers)
    extra: dict[str, object] = dict(exc.extra)
    if exc.retry_after_s is not None:
        headers["Retry-After"] = retry_after_header(exc.retry_after_s)
        extra["retry_after_s"] = int(headers["Retry-After"])
    if exc.reason is not None:
        extra["reason"] = exc.reason
    if exc.waited_s is not None:  # the page draws a refusal after a wait as server wait, not "그 밖"
        headers["Server-Timing"] = server_timing(exc.waited_s)
    return SafeJSONResponse(error_body(exc.kind, exc.message, **extra), status_code=exc.status, headers=headers)


def field_name(loc: tuple[int | str, ...] | list[int | str]) -> str:
    """`text` for ("body", "text"); `body` for the body as a whole."""
    parts = [str(part) for part in loc[1:]] if len(loc) > 1 else [str(part) for part in loc]
    return ".".join(parts)


# A 422 lists at most this many problems, each part of a location cut to LOC_PART_CHARS: 1,500
# unknown keys in a 14 KB body made a 132 KB answer, a 9.5x amplifier.
MAX_FIELDS = 10
LOC_PART_CHARS = 64


def _loc_part(part: int | str) -> int | str:
    return part if isinstance(part, int) or len(part) <= LOC_PART_CHARS else part[:LOC_PART_CHARS] + "…"


def validation_response(exc: RequestValidationError) -> JSONResponse:
    """One sentence naming the first problem; the first MAX_FIELDS under `fields`, without echoing the input."""
    errors = list(exc.errors())
    fields = [
        {
            "loc": [_loc_part(part) for part in e.get("loc", ())],
            "msg": str(e.get("msg", ""))[:200],
            "type": str(e.get("type", "")),
        }
        for e in errors[:MAX_FIELDS]
    ]
    if errors:
        first = errors[0]
        detail = f"`{field_name([_loc_part(p) for p in first.get('loc', ('body',))])}`: {first.get('msg', 'invalid')}."
        if len(errors) > MAX_FIELDS:
            detail += f" {len(errors)} problems in all; the first {MAX_FIELDS} are listed."
    else:
        detail = "The request does not match the schema."
    return SafeJSONResponse(error_body(INVALID_REQUEST, detail, fields=fields), status_code=INVALID_REQUEST.status)


def http_kind(status: int) -> ErrorKind:
    if status in BY_STATUS:
        return BY_STATUS[status]
    phrase = HTTPStatus(status).phrase if status in HTTPStatus._value2member_map_ else "error"
    return ErrorKind(status, phrase.lower().replace(" ", "_").replace("-", "_"), phrase)


METHOD_ORDER = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")


def allowed_methods(request: Request, named: str) -> str:
    """Every method some route serves at this URL. Starlette names only the first route that matches
    the path (GET and DELETE on a ticket are two routes), so the documented operations are added."""
    methods = {m.strip() for m in named.split(",") if m.strip()}
    for template, operations in request.app.openapi()["paths"].items():
        if re.fullmatch(re.sub(r"\\{[^/]+?\\}", "[^/]+", re.escape(template)), request.url.path):
            methods |= {m.upper() for m in operations}
    return ", ".join(sorted(methods, key=lambda m: (*METHOD_ORDER, m).index(m)))


def http_response(request: Request, exc: HTTPException) -> JSONResponse:
    kind = http_kind(exc.status_code)
    detail, headers = str(exc.detail), dict(exc.headers or {})
    if exc.status_code == 404 and detail == "Not Found":
        detail = f"No route at {request.url.path}."
    elif exc.status_code == 405:
        headers["Allow"] = allowed_methods(request, headers.get("Allow", ""))
        detail = f"{request.method} is not allowed on {request.url.path}; allowed: {headers['Allow']}."
    return SafeJSONResponse(error_body(kind, detail), status_code=exc.status_code, headers=headers)


def note(request: Request, code: str, reason: str | None = None) -> None:
    setattr(request.state, NOTED_ERROR, (code, reason))


def install_error_handlers(app: FastAPI) -> None:
    async def on_lab_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, LabError)
        note(request, exc.code, exc.reason)
        return error_response(exc)

    async def on_validation(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        note(request, INVALID_REQUEST.code)
        return validation_response(exc)

    async def on_http(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, HTTPException)
        note(request, http_kind(exc.status_code).code)
        return http_response(request, exc)

    app.add_exception_handler(LabError, on_lab_error)
    app.add_exception_handler(RequestValidationError, on_validation)
    app.add_exception_handler(HTTPException, on_http)
