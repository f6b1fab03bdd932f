"""The body and headers of a prediction answer: the burst page reads exactly these."""

from dataclasses import asdict

from app.contract.schema import PredictionOut, TopicOut
from app.paths.pipeline import Outcome


def server_timing(wait_s: float, infer_s: float | None = None) -> str:
    """`wait` and `infer` in milliseconds: the page draws its bars from exactly these (a refusal has no `infer`)."""
    wait = f"wait;dur={wait_s * 1000:.1f}"
    return wait if infer_s is None else f"{wait}, infer;dur={infer_s * 1000:.1f}"


def prediction_body(path: str, outcome: Outcome, *, cache_hit: bool) -> PredictionOut:
    topics = [TopicOut(**asdict(t)) for t in outcome.ranking]
    return PredictionOut(
        path=path,
        topics=topics,
        top=topics[0],
        wait_ms=round(outcome.wait_s * 1000, 1),
        inference_ms=round(outcome.infer_s * 1000, 1),
        batch_size=outcome.batch_size,
        batch_id=outcome.batch_id,
        cache="hit" if cache_hit else "miss",
    )


def prediction_headers(outcome: Outcome, *, cache_hit: bool) -> dict[str, str]:
    headers = {
        "Server-Timing": server_timing(outcome.wait_s, outcome.infer_s),
        "X-Cache": "hit" if cache_hit else "miss",
    }
    if outcome.batch_size is not None:
        headers["X-Batch-Size"] = str(outcome.batch_size)
    if outcome.batch_id is not None:
        headers["X-Batch-Id"] = str(outcome.batch_id)
    return headers
