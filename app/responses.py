"""The shape every prediction answer shares, and the headers the burst page reads."""

from dataclasses import asdict

from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, StrictStr

from app.model import Ranking


class ReviewIn(BaseModel):
    """One customer review to score against the topics."""

    model_config = ConfigDict(
        extra="forbid", json_schema_extra={"examples": [{"text": "빵은 맛있는데 줄이 너무 길어요."}]}
    )

    # `pattern` documents "not blank" for clients and fuzzers; review_text() enforces it with a clear message.
    text: StrictStr = Field(
        description="The review, in Korean. Blank text is refused.", json_schema_extra={"pattern": r"\S"}
    )


class TopicOut(BaseModel):
    id: str
    label: str
    score: float


class PredictionOut(BaseModel):
    path: str
    topics: list[TopicOut] = Field(description="All topics, best first.")
    top: TopicOut
    wait_ms: float
    inference_ms: float
    batch_size: int | None = None
    cache: str = Field(description="hit or miss")


def server_timing(wait_s: float, infer_s: float) -> str:
    """`wait` and `infer` in milliseconds: the page draws its bars from exactly these."""
    return f"wait;dur={wait_s * 1000:.1f}, infer;dur={infer_s * 1000:.1f}"


def prediction_response(
    path: str,
    ranking: Ranking,
    *,
    wait_s: float,
    infer_s: float,
    cache_hit: bool,
    batch_size: int | None = None,
) -> JSONResponse:
    topics = [asdict(t) for t in ranking]
    body = {
        "path": path,
        "topics": topics,
        "top": topics[0],
        "wait_ms": round(wait_s * 1000, 1),
        "inference_ms": round(infer_s * 1000, 1),
        "batch_size": batch_size,
        "cache": "hit" if cache_hit else "miss",
    }
    headers = {"Server-Timing": server_timing(wait_s, infer_s), "X-Cache": "hit" if cache_hit else "miss"}
    if batch_size is not None:
        headers["X-Batch-Size"] = str(batch_size)
    return JSONResponse(body, headers=headers)
