"""The input and output contract in one place: the models, the text rule, and what the OpenAPI document says.

Limits come from Settings: `check_text` enforces them per request, `document` writes the same
numbers into the OpenAPI document and into every route summary that names one (`{seats}`).
"""

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, StrictStr

from app.errors import TABLE, InvalidReview, LabError
from app.jobs.models import JobStatus, WebhookState
from app.jobs.ssrf import MAX_URL_CHARS
from app.settings import Settings

MIN_TIME_IN_QUEUE_S = 1.0
MAX_FOLLOWED_JOBS = 100  # one stream for a whole burst (the page fires at most 50)
MAX_IDEMPOTENCY_KEY_CHARS = 200


# Characters nobody can see: controls, whitespace, zero-width and format characters, BOM, and the
# Hangul fillers. Written with \u escapes only, so Python's `re` and the JSON Schema (ECMA-262)
# pattern read the same class; a review must hold at least one character outside it.
INVISIBLE = (
    r"\u0000-\u0020\u007f-\u00a0\u00ad\u061c\u115f\u1160\u1680\u180e\u2000-\u200f"
    r"\u2028-\u202f\u205f-\u206f\u2800\u3000\u3164\ufeff\uffa0\ufff9-\ufffb"
)
VISIBLE_PATTERN = f"[^{INVISIBLE}]"
_VISIBLE = re.compile(VISIBLE_PATTERN)
TEXT_RULE = (
    "The review, in Korean. It must be valid Unicode (no lone surrogates) and hold at least one visible "
    "character (not only spaces, controls, zero-width characters or BOMs); it is trimmed of surrounding "
    "whitespace, then may have at most `maxLength` characters."
)


def valid_unicode(value: str, field: str, error: type[LabError] = InvalidReview) -> None:
    """Refuse a lone surrogate (JSON `"\\ud800"`): it cannot be encoded, hashed or tokenized."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise error(
            f"`{field}` is not valid Unicode: a lone surrogate U+{ord(value[exc.start]):04X} at character {exc.start}."
        ) from None


def check_text(text: str, max_chars: int) -> str:
    """The one text rule, applied before anything touches the text; returns the trimmed review."""
    valid_unicode(text, "text")
    trimmed = text.strip()
    if not trimmed:
        raise InvalidReview("`text` is blank: send the review to score.")
    if _VISIBLE.search(trimmed) is None:
        raise InvalidReview("`text` has no visible character (only controls, zero-width characters or BOMs).")
    if len(trimmed) > max_chars:
        raise InvalidReview(f"`text` has {len(trimmed)} characters; the limit is {max_chars}.")
    return trimmed


class ReviewIn(BaseModel):
    """One customer review to score against the topics."""

    model_config = ConfigDict(
        extra="forbid", json_schema_extra={"examples": [{"text": "빵은 맛있는데 줄이 너무 길어요."}]}
    )

    text: StrictStr = Field(description=TEXT_RULE, json_schema_extra={"pattern": VISIBLE_PATTERN})


class JobIn(ReviewIn):
    """A review to score later, with optional ticket options."""

    webhook_url: StrictStr | None = Field(
        None,
        description="POSTed a signed payload (Standard Webhooks) when the job ends; public http(s) addresses only.",
        json_schema_extra={"format": "uri", "maxLength": MAX_URL_CHARS},
    )
    max_time_in_queue_s: float | None = Field(
        None, description="Expire the job if it is still queued after this many seconds (bounded by the server)."
    )


class TopicOut(BaseModel):
    id: str
    label: str
    score: float


class PredictionOut(BaseModel):
    """What ①②③ answer; the same numbers are in the Server-Timing header."""

    path: str = Field(description="naive, limited or batched")
    topics: list[TopicOut] = Field(description="All topics, best first.")
    top: TopicOut
    wait_ms: float = Field(description="From arrival to the start of inference (0 on a cache hit)")
    inference_ms: float = Field(description="The model call (0 on a cache hit)")
    batch_size: int | None = Field(None, description="Reviews in the batch (③ only; null elsewhere)")
    cache: str = Field(description="hit or miss")


class JobOut(BaseModel):
    job_id: str
    status: JobStatus
    position: int | None = Field(None, description="Jobs ahead of this one, the running ones included")
    eta_seconds: float | None = Field(None, description="Estimated seconds until done, from measured service time")
    result: dict[str, list[dict[str, Any]]] | None = Field(None, description='Once done: {"topics": [...]}, best first')
    error: str | None = None
    waited_ms: float | None = None
    inference_ms: float | None = None
    attempts: int = 0
    enqueued_at: float | None = Field(None, description="Epoch seconds")
    started_at: float | None = None
    finished_at: float | None = None
    expires_at: float | None = Field(None, description="Still queued after this → expired (epoch seconds)")
    webhook_state: WebhookState | None = None
    webhook_attempts: int = 0


class ErrorOut(BaseModel):
    """Every 4xx/5xx body. A 422 from the schema adds `fields`; a 429/503 with a hint adds `retry_after_s`,
    a refusal its `reason`."""

    error: str = Field(description=" | ".join(sorted({kind.code for kind in TABLE})))
    detail: str = Field(description="One sentence for people")
    retry_after_s: int | None = Field(None, description="The Retry-After header, in whole seconds")
    reason: str | None = Field(
        None,
        description="A refusal's own reason, as /api/stats `rejections` and the metrics count it: "
        "seats_full | queue_too_long | waited_too_long | job_queue_full | memory_would_not_fit",
    )
    fields: list[dict[str, Any]] | None = Field(None, description="422 from the schema: each problem's loc/msg/type")


def limits(settings: Settings) -> dict[str, str]:
    """The numbers route summaries and the page quote, formatted as people read them."""
    return {
        "window_ms": f"{settings.batch_window_s * 1000:g}",
        "batch_max": str(settings.batch_max),
        "seats": str(settings.limited_seats),
        "max_wait_s": f"{settings.limited_max_wait_s:g}",
        "queue_max_jobs": str(settings.queue_max_jobs),
        "max_text_chars": str(settings.max_text_chars),
        "max_followed": str(MAX_FOLLOWED_JOBS),
    }


def quoted(text: str, settings: Settings) -> str:
    """`text` with every `{name}` of `limits` replaced (other braces are left alone)."""
    for name, value in limits(settings).items():
        text = text.replace("{" + name + "}", value)
    return text
