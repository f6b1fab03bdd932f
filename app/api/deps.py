"""Shared request plumbing: the lab object and a validated review text."""

import time
from typing import Annotated

from fastapi import Depends, Request

from app.errors import InvalidReview
from app.lab import Lab
from app.responses import ReviewIn


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
    413: {"description": "Body over the size cap"},
    422: {"description": "Blank, overlong or malformed review"},
}
