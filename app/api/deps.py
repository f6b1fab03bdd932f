"""Shared request plumbing: the lab object, a checked review text, and when the request arrived."""

import time
from typing import Annotated

from fastapi import Depends, Request

from app.contract.schema import ReviewIn, check_text
from app.lab import Lab


def get_lab(request: Request) -> Lab:
    lab: Lab = request.app.state.lab
    return lab


async def review_text(review: ReviewIn, request: Request) -> str:
    """The text rule (app/contract/schema.py) applied before the text can reach the cache, a store or the lane."""
    return check_text(review.text, get_lab(request).settings.max_text_chars)


def arrived_at(request: Request) -> float:
    """When the request reached the server (stamped by LabMiddleware)."""
    stamped: float | None = getattr(request.state, "arrived_at", None)
    return time.monotonic() if stamped is None else stamped


ReviewText = Annotated[str, Depends(review_text)]
