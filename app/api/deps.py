"""Shared request plumbing: the lab object and a validated review text."""

import time
from typing import Annotated, Any

from fastapi import Depends, FastAPI, Request

from app.errors import InvalidReview
from app.lab import Lab
from app.responses import ReviewIn
from app.settings import Settings
from app.strategies.tickets import MIN_TIME_IN_QUEUE_S


def get_lab(request: Request) -> Lab:
    lab: Lab = request.app.state.lab
    return lab


async def review_text(review: ReviewIn, request: Request) -> str:
    """Blank or overlong text is refused with 422 before it can reach the lane."""
    lab = get_lab(request)
    text = review.text.strip()
    if not text:
        raise InvalidReview("`text` is blank: send the review to score.")
    limit = lab.settings.max_text_chars
    if len(text) > limit:
        raise InvalidReview(f"`text` has {len(text)} characters; the limit is {limit}.")
    return text


def arrived_at(request: Request) -> float:
    """When the request reached the server (stamped by LabMiddleware)."""
    stamped: float | None = getattr(request.state, "arrived_at", None)
    return time.monotonic() if stamped is None else stamped


ReviewText = Annotated[str, Depends(review_text)]
INPUT_ERRORS: dict[int | str, dict[str, object]] = {
    400: {"description": "Body could not be decoded (not UTF-8)"},
    413: {"description": "Body over the size cap"},
    422: {"description": "Blank, overlong or malformed review"},
}


def document_limits(app: FastAPI, settings: Settings) -> None:
    """Put the configured input limits into the OpenAPI document, so clients and fuzzers see the real contract."""
    build = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = build()
            models = schema["components"]["schemas"]
            for name in ("ReviewIn", "JobIn"):
                if name in models:
                    models[name]["properties"]["text"]["maxLength"] = settings.max_text_chars
            if "max_time_in_queue_s" in models.get("JobIn", {}).get("properties", {}):
                bound = models["JobIn"]["properties"]["max_time_in_queue_s"]
                bound["minimum"] = MIN_TIME_IN_QUEUE_S
                bound["maximum"] = settings.job_max_time_in_queue_cap_s
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
