"""What the OpenAPI document declares beyond the models: answers with their bodies and headers, and the limits.

Routes declare their answers with `answer(...)`; `LabAPI` fills in, once per app, the numbers
that come from Settings (text length, queue-time bounds, `{seats}` and friends in summaries).
"""

from typing import Any

from fastapi import FastAPI

from app.contract.schema import ErrorOut, quoted
from app.paths.ticket_config import MIN_TIME_IN_QUEUE_S
from app.settings import Settings

HEADERS: dict[str, dict[str, Any]] = {
    "Server-Timing": {
        "description": "`wait;dur=<ms>, infer;dur=<ms>`: the page draws its timing bars from these.",
        "schema": {"type": "string"},
    },
    "X-Cache": {"description": "`hit` (answered from the result cache) or `miss`.", "schema": {"type": "string"}},
    "X-Batch-Size": {"description": "Reviews inferred together in this batch (③).", "schema": {"type": "integer"}},
    "X-Batch-Id": {
        "description": "Which batch (③, counted from the lab's start): answers with the same id rode together.",
        "schema": {"type": "integer"},
    },
    "Retry-After": {
        "description": "Whole seconds until there is likely room, from measured service time.",
        "schema": {"type": "integer"},
    },
    "Seat-Hold": {
        "description": "② 429, one per seat the admitted will free (the rest get only Retry-After): a token for "
        "a seat held until a few seconds after Retry-After; send it back as the Seat-Hold request header (once).",
        "schema": {"type": "string"},
    },
    "Seat-Hold-Result": {
        "description": "② when a Seat-Hold was sent: seated, forged, expired or used.",
        "schema": {"type": "string"},
    },
    "Location": {
        "description": "The ticket's URL: poll it, follow its /events, or DELETE it.",
        "schema": {"type": "string"},
    },
    "Idempotent-Replayed": {
        "description": "`true` when this answer replays an earlier request with the same Idempotency-Key.",
        "schema": {"type": "string"},
    },
}


def headers(*names: str) -> dict[str, dict[str, Any]]:
    return {name: HEADERS[name] for name in names}


def answer(status: int, description: str, *header_names: str) -> dict[int | str, dict[str, Any]]:
    """One documented answer: an error (>= 400) carries the one error body."""
    declared: dict[str, Any] = {"description": description}
    if status >= 400:
        declared["model"] = ErrorOut
    if header_names:
        declared["headers"] = headers(*header_names)
    return {status: declared}


def answers(*parts: dict[int | str, dict[str, Any]]) -> dict[int | str, dict[str, Any]]:
    merged: dict[int | str, dict[str, Any]] = {}
    for part in parts:
        merged.update(part)
    return merged


INPUT_ERRORS = answers(
    answer(400, "Body could not be decoded (not UTF-8)"),
    answer(413, "Body over the size cap"),
    answer(422, "Blank, invisible, overlong or malformed review (see `fields` for schema problems)"),
)


class LabAPI(FastAPI):
    """FastAPI whose OpenAPI document carries the configured limits, so clients and fuzzers see the real contract.

    Built once and cached like FastAPI's own; turning a knob clears `openapi_schema` to rebuild it."""

    def __init__(self, settings: Settings, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.lab_settings = settings

    def openapi(self) -> dict[str, Any]:
        if self.openapi_schema is None:
            schema = super().openapi()
            settings = self.lab_settings
            models = schema["components"]["schemas"]
            for name in ("ReviewIn", "JobIn"):
                if name in models:
                    models[name]["properties"]["text"]["maxLength"] = settings.max_text_chars
            bound = models.get("JobIn", {}).get("properties", {}).get("max_time_in_queue_s")
            if bound is not None:
                bound["minimum"] = MIN_TIME_IN_QUEUE_S
                bound["maximum"] = settings.job_max_time_in_queue_cap_s
            for operations in schema["paths"].values():
                for operation in operations.values():
                    for key in ("summary", "description"):
                        if key in operation:
                            operation[key] = quoted(operation[key], settings)
                    for answered in operation.get("responses", {}).values():
                        answered["description"] = quoted(answered.get("description", ""), settings)
            self.openapi_schema = schema
        return self.openapi_schema
