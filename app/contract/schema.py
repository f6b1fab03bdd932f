"""The input and output contract in one place: the models, the text rule, and what the OpenAPI document says.

Limits come from Settings: `check_text` enforces them per request, `LabAPI` (app/contract/openapi.py) writes the same
numbers into the OpenAPI document and into every route summary that names one (`{seats}`).
"""

from typing import Any

import regex
from pydantic import BaseModel, ConfigDict, Field, StrictFloat, StrictStr

from app.errors import TABLE, InvalidReview, LabError
from app.jobs.models import Job, JobStatus, WebhookState
from app.jobs.ssrf import MAX_URL_CHARS
from app.paths.registry import PATHS, every_knob
from app.settings import Settings

DIRECT = [p.name for p in PATHS if p.answer == "direct"]  # the paths that answer with the result
MAX_FOLLOWED_JOBS = 100  # one stream for a whole burst (the page fires at most 50)
MAX_IDEMPOTENCY_KEY_CHARS = 200


# A review must hold a character people can see: a letter, number, punctuation mark or symbol (Unicode's
# L*, N*, P*, S*), but not one of those that draws nothing (the Default_Ignorable ones among them, such as
# the Hangul fillers; the braille blank U+2800) nor a stand-in for what is not there (U+FFFC, the object
# replacement character; U+FFFD, the mark of undecodable bytes). Marks alone (combining accents, Thai tone
# marks, an enclosing circle), spaces, format characters (zero-width, BOM, tags, hieroglyph format
# controls), private use, noncharacters and unassigned code points are not enough. Controls other than
# tab, newline and carriage return are refused anywhere in the text (NUL among them). The properties come
# from the `regex` module's copy of the Unicode Character Database, updated with each Unicode release:
# Python's unicodedata has no Default_Ignorable_Code_Point.
VISIBLE_CLASS = r"[\p{L}\p{N}\p{P}\p{S}]--[\p{Default_Ignorable_Code_Point}\u2800\ufffc\ufffd]"
CONTROL_CLASS = r"\p{Cc}--[\t\n\r]"
_VISIBLE = regex.compile(f"[{VISIBLE_CLASS}]", regex.V1)
_CONTROL = regex.compile(f"[{CONTROL_CLASS}]", regex.V1)


def bmp_ranges(char_class: str) -> str:
    """`char_class` (a `regex` V1 set) within the BMP as `\\u` ranges, which Python's `re` and a JSON Schema
    (ECMA-262) pattern read the same way; characters beyond the BMP are checked by the server only."""
    # No range runs across the surrogates: to a JSON Schema validator (ECMA-262, no `u` flag) they are the
    # halves of every character beyond the BMP, which the pattern counts as visible.
    runs: list[tuple[int, int]] = []
    for first, last in ((0, 0xD7FF), (0xE000, 0xFFFF)):
        part = "".join(map(chr, range(first, last + 1)))
        found = regex.finditer(f"[{char_class}]+", part, regex.V1)
        runs += [(first + m.start(), first + m.end() - 1) for m in found]
    return "".join(f"\\u{a:04x}" if a == b else f"\\u{a:04x}-\\u{b:04x}" for a, b in runs)


CONTROLS = bmp_ranges(CONTROL_CLASS)
INVISIBLE = bmp_ranges(f"[^[{VISIBLE_CLASS}][{CONTROL_CLASS}]]")  # neither visible nor refused: may surround one
# Invisible characters, then the first visible one, then anything but a refused control, to the end: no
# backtracking, and the same answer as the server for every text of the BMP (astral characters count as visible).
VISIBLE_PATTERN = f"^[{INVISIBLE}]*[^{INVISIBLE}{CONTROLS}][^{CONTROLS}]*$"
TEXT_RULE = (
    "The review, in Korean. It must be valid Unicode (no lone surrogates), have no control characters but tab, "
    "newline and carriage return, and hold at least one visible character: a letter, number, punctuation mark "
    "or symbol (not only spaces, combining marks, zero-width or other format characters, private-use, "
    "unassigned or replacement characters); it is trimmed of surrounding whitespace, then may have at most "
    "`maxLength` characters."
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
    if (control := _CONTROL.search(text)) is not None:
        raise InvalidReview(
            f"`text` has a control character U+{ord(control.group()):04X} at character {control.start()}: "
            "only tab, newline and carriage return may appear in a review."
        )
    trimmed = text.strip()
    if not trimmed:
        raise InvalidReview("`text` is blank: send the review to score.")
    if _VISIBLE.search(trimmed) is None:
        raise InvalidReview(
            "`text` has no visible character: no letter, number, punctuation mark or symbol, only spaces, "
            "marks, format, private-use, unassigned or replacement characters."
        )
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
    # Strict like `text`: "10" and true are refused, not coerced (a number, integer or not).
    max_time_in_queue_s: StrictFloat | None = Field(
        None, description="Expire the job if it is still queued after this many seconds (bounded by the server)."
    )


class TopicOut(BaseModel):
    id: str
    label: str
    score: float


class PredictionOut(BaseModel):
    """What ①②③ answer; the same numbers are in the Server-Timing header."""

    path: str = Field(description=f"{', '.join(DIRECT[:-1])} or {DIRECT[-1]}")
    topics: list[TopicOut] = Field(description="All topics, best first.")
    top: TopicOut
    wait_ms: float = Field(description="From arrival to the start of inference (0 on a cache hit)")
    inference_ms: float = Field(
        description="From the start of inference to this review's answer (0 on a cache hit); in a ③ batch each "
        "member is answered when its own pairs are scored"
    )
    batch_size: int | None = Field(None, description="Reviews in the batch (③ only; null elsewhere)")
    batch_id: int | None = Field(None, description="Which batch (③ only): answers with the same id rode together")
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

    @classmethod
    def of(cls, job: Job, position: int | None, eta_seconds: float | None) -> "JobOut":
        """Every field the job has under the same name is read from it: a new one is declared here, once."""
        own = {name: getattr(job, name) for name in cls.model_fields if hasattr(job, name)}
        return cls(**own, job_id=job.id, position=position, eta_seconds=eta_seconds)


class ErrorOut(BaseModel):
    """Every 4xx/5xx body. A 422 from the schema adds `fields`; a 429/503 with a hint adds `retry_after_s`,
    a refusal its `reason`."""

    error: str = Field(description=" | ".join(sorted({kind.code for kind in TABLE})))
    detail: str = Field(description="One sentence for people")
    retry_after_s: int | None = Field(None, description="The Retry-After header, in whole seconds")
    reason: str | None = Field(
        None,
        description="A refusal's own reason, as /api/stats `rejections` and the metrics count it: "
        + " | ".join(reason for path in PATHS for reason in path.refusals),
    )
    fields: list[dict[str, Any]] | None = Field(None, description="422 from the schema: each problem's loc/msg/type")
    hold_token: str | None = Field(
        None, description="② 429: send it back as the Seat-Hold header within hold_grace_s after Retry-After"
    )
    hold_grace_s: float | None = Field(None, description="② 429: how long after Retry-After the held seat waits")


def limits(settings: Settings) -> dict[str, str]:
    """The numbers route summaries and the page quote, formatted as people read them: every knob's under its
    `limit` (× its `scale`), so a new knob is quoted without an edit here, and the few that are no knob."""
    knobs = every_knob().values()
    quoted = {k.limit: f"{getattr(settings, k.setting) * k.scale:g}" for k in knobs if k.limit}
    return quoted | {
        "hold_grace_s": f"{settings.limited_hold_grace_s:g}",
        "max_text_chars": str(settings.max_text_chars),
        "max_followed": str(MAX_FOLLOWED_JOBS),
    }


def quoted(text: str, settings: Settings) -> str:
    """`text` with every `{name}` of `limits` replaced (other braces are left alone)."""
    for name, value in limits(settings).items():
        text = text.replace("{" + name + "}", value)
    return text
