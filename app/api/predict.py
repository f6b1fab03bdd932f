"""Paths 1-3: the same review, scored three ways."""

import time

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from app import metrics
from app.api.deps import INPUT_ERRORS, ReviewText, arrived_at, get_lab
from app.disconnect import unless_client_leaves
from app.errors import InferenceFailed, LabError
from app.responses import PredictionOut, prediction_response

router = APIRouter(prefix="/api", tags=["predict"])


def cached_response(request: Request, path: str, text: str) -> JSONResponse | None:
    ranking = get_lab(request).cache.get(text)
    if ranking is None:
        return None
    metrics.CACHE_HITS.labels(path).inc()
    return prediction_response(path, ranking, wait_s=0.0, infer_s=0.0, cache_hit=True)


@router.post(
    "/naive/predict",
    response_model=PredictionOut,
    responses={**INPUT_ERRORS, 503: {"description": "Memory guard on and one more inference would not fit"}},
    summary="① naive: infer at once",
)
def predict_naive(text: ReviewText, request: Request) -> JSONResponse:
    """Runs its own inference immediately on a server thread, beside every other request."""
    if (hit := cached_response(request, "naive", text)) is not None:
        return hit
    lab = get_lab(request)
    wait_s = time.monotonic() - arrived_at(request)
    try:
        ranking, infer_s = lab.naive.run(text)
    except LabError:
        raise
    except Exception as exc:
        raise InferenceFailed(f"Inference failed: {exc}") from exc
    lab.cache.put(text, ranking)
    metrics.WAIT_SECONDS.labels("naive").observe(wait_s)
    metrics.INFERENCE_SECONDS.labels("naive").observe(infer_s)
    return prediction_response("naive", ranking, wait_s=wait_s, infer_s=infer_s, cache_hit=False)


@router.post(
    "/limited/predict",
    response_model=PredictionOut,
    responses={
        **INPUT_ERRORS,
        429: {"description": "The box is full (every seat taken); see Retry-After"},
        503: {"description": "Waited too long for the model; see Retry-After"},
    },
    summary="② limited: 1 in flight + 4 seats",
)
async def predict_limited(text: ReviewText, request: Request) -> JSONResponse:
    """One inference at a time plus a few waiting seats; the rest get 429 at once."""
    if (hit := cached_response(request, "limited", text)) is not None:
        return hit
    lab = get_lab(request)
    result, wait_s = await unless_client_leaves(request, "limited", lab.limited.run(text))
    ranking = result.rankings[0]
    lab.cache.put(text, ranking)
    metrics.WAIT_SECONDS.labels("limited").observe(wait_s)
    metrics.INFERENCE_SECONDS.labels("limited").observe(result.infer_s)
    return prediction_response("limited", ranking, wait_s=wait_s, infer_s=result.infer_s, cache_hit=False)


@router.post(
    "/batched/predict",
    response_model=PredictionOut,
    responses={**INPUT_ERRORS, 429: {"description": "Predicted wait over LAB_BATCH_MAX_WAIT_S; see Retry-After"}},
    summary="③ batched: ride a shared batch",
)
async def predict_batched(text: ReviewText, request: Request) -> JSONResponse:
    """Gathered with others for up to 25 ms (up to 8) and inferred as one batch."""
    if (hit := cached_response(request, "batched", text)) is not None:
        return hit
    lab = get_lab(request)
    result = await unless_client_leaves(request, "batched", lab.batcher.run(text))
    lab.cache.put(text, result.ranking)
    metrics.WAIT_SECONDS.labels("batched").observe(result.wait_s)
    metrics.INFERENCE_SECONDS.labels("batched").observe(result.infer_s)
    return prediction_response(
        "batched",
        result.ranking,
        wait_s=result.wait_s,
        infer_s=result.infer_s,
        cache_hit=False,
        batch_size=result.batch_size,
    )
