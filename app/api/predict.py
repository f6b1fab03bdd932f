"""Paths 1-3: the same review, scored three ways, through one `serve`."""

import time
from collections.abc import Awaitable, Callable, Collection, Sequence
from dataclasses import replace
from typing import Annotated

from fastapi import APIRouter, Header, Request, Response
from fastapi.routing import APIRoute

from app.api.deps import ReviewText, arrived_at, get_lab
from app.contract import student
from app.contract.openapi import INPUT_ERRORS, answer, answers
from app.contract.responses import prediction_body, prediction_headers
from app.contract.schema import PredictionOut
from app.door.disconnect import unless_client_leaves
from app.errors import ClientGone
from app.paths.adaptive import AdaptiveGate
from app.paths.batched import MicroBatcher
from app.paths.limited import SeatGate
from app.paths.naive import NaiveRunner
from app.paths.pipeline import DirectPath, Outcome
from app.paths.registry import PathSpec

router = APIRouter(prefix="/api", tags=["predict"])
PREDICTION_HEADERS = ("Server-Timing", "X-Cache")
# Printable ASCII, as every token a 429 gives is: a byte past it (latin-1 é, \xff) is a 422, never a 500.
SEAT_HOLD_PATTERN = r"^[\x20-\x7e]*$"


async def serve(path: DirectPath, text: str, request: Request, response: Response) -> PredictionOut:
    """cache → run → cache put → timings → headers, the same for every direct path.

    The wait runs from the request's arrival (LabMiddleware's stamp) to the start of its inference.
    """
    pipeline = get_lab(request).pipeline
    arrived = arrived_at(request)
    handed_over = time.monotonic()

    async def run() -> Outcome:
        work = path.run(text)
        try:
            return await (unless_client_leaves(request, work) if path.withdrawable else work)
        except ClientGone:
            pipeline.client_gone(path.name)
            raise

    outcome, hit = await pipeline.through_cache(path.name, text, run)
    if not hit:
        outcome = replace(outcome, wait_s=outcome.wait_s + handed_over - arrived)
        pipeline.waited(path.name, outcome.wait_s)
    response.headers.update(prediction_headers(outcome, cache_hit=hit))
    return prediction_body(path.name, outcome, cache_hit=hit)


@router.post(
    "/naive/predict",
    response_model=PredictionOut,
    responses=answers(
        answer(200, "Scored", *PREDICTION_HEADERS),
        INPUT_ERRORS,
        answer(503, "Memory guard on and one more inference would not fit; see Retry-After", "Retry-After"),
    ),
    summary="① naive: infer at once",
)
async def predict_naive(text: ReviewText, request: Request, response: Response) -> PredictionOut:
    """Runs its own inference immediately on a server thread, beside every other request."""
    return await serve(get_lab(request).path("naive", NaiveRunner), text, request, response)


@router.post(
    "/limited/predict",
    response_model=PredictionOut,
    responses=answers(
        answer(200, "Scored", *PREDICTION_HEADERS, "Seat-Hold-Result"),
        INPUT_ERRORS,
        answer(
            429,
            "The box is full (every seat taken); see Retry-After and Seat-Hold",
            "Retry-After",
            "Seat-Hold",
            "Seat-Hold-Result",
        ),
        answer(503, "Waited too long for the model ({max_wait_s} s); see Retry-After", "Retry-After"),
    ),
    summary="② limited: 1 in flight + {seats} seats",
)
async def predict_limited(
    text: ReviewText,
    request: Request,
    response: Response,
    seat_hold: Annotated[
        str | None,
        Header(max_length=200, pattern=SEAT_HOLD_PATTERN, description="The token a 429 gave: claims its held seat"),
    ] = None,
) -> PredictionOut:
    """One inference at a time plus {seats} waiting seats; the rest get 429 at once, with a held seat
    (`Seat-Hold`) for when they come back. `Seat-Hold-Result` says what a presented token got."""
    visit = get_lab(request).path("limited", SeatGate).visit(seat_hold)
    try:
        body = await serve(visit, text, request, response)
    finally:
        visit.unused()
    if visit.result:
        response.headers["Seat-Hold-Result"] = visit.result
    return body


@router.post(
    "/batched/predict",
    response_model=PredictionOut,
    responses=answers(
        answer(200, "Scored", *PREDICTION_HEADERS, "X-Batch-Size", "X-Batch-Id"),
        INPUT_ERRORS,
        answer(429, "Predicted wait over LAB_BATCH_MAX_WAIT_S; see Retry-After", "Retry-After"),
        answer(503, "The model failed on the batch"),
    ),
    summary="③ batched: ride a shared batch",
)
async def predict_batched(text: ReviewText, request: Request, response: Response) -> PredictionOut:
    """Gathered with others for up to {window_ms} ms (up to {batch_max}) and inferred as one batch."""
    return await serve(get_lab(request).path("batched", MicroBatcher), text, request, response)


@router.post(
    "/adaptive/predict",
    response_model=PredictionOut,
    responses=answers(
        answer(200, "Scored", *PREDICTION_HEADERS),
        INPUT_ERRORS,
        answer(429, "No answer could be promised within the bound (`reason`); see Retry-After", "Retry-After"),
        answer(503, "The model failed on this review"),
    ),
    summary="⑤ adaptive: admitted by measured queueing delay (beyond the handout)",
)
async def predict_adaptive(text: ReviewText, request: Request, response: Response) -> PredictionOut:
    """Promised a start within {adaptive_drain_reviews} reviews' time while the queue drains, within
    {adaptive_target_reviews} once it stands (CoDel-style), and an answer within that and its own review; refused at
    once when that or an earlier waiter's promise could not be kept, or when a student's second request in a crowd
    would take the place kept for a classmate not come yet. Newest first while it stands, never at an older one's
    cost."""
    visit = get_lab(request).path("adaptive", AdaptiveGate).visit(student.key_of(request.scope))
    return await serve(visit, text, request, response)


def declared_routes() -> set[str]:
    """The routes written out above."""
    return {route.path for route in router.routes if isinstance(route, APIRoute)}


def plain_routes(specs: Sequence[PathSpec], declared: Collection[str]) -> APIRouter:
    """The route of each direct path with nothing to say beyond "score this review" and no route declared above:
    the registry's own words document it, and it serves through `serve` like the routes above. A path whose
    answer carries more (a header, a ticket) declares its route by hand."""
    plain = APIRouter(tags=["predict"])
    for spec in specs:
        if spec.answer == "direct" and spec.route not in declared:
            refused = [answer(s, "Refused; see Retry-After", "Retry-After") for s in spec.statuses if s >= 400]
            plain.add_api_route(
                spec.route,
                plain_endpoint(spec.name),
                methods=["POST"],
                response_model=PredictionOut,
                responses=answers(
                    answer(200, "Scored", *PREDICTION_HEADERS),
                    INPUT_ERRORS,
                    *refused,
                ),
                summary=f"{spec.label}: {spec.blurb}",
                name=f"predict_{spec.name}",
            )
    return plain


def plain_endpoint(name: str) -> Callable[[str, Request, Response], Awaitable[PredictionOut]]:
    async def predict(text: ReviewText, request: Request, response: Response) -> PredictionOut:
        path = get_lab(request).paths[name]
        if not isinstance(path, DirectPath):
            raise TypeError(f"path {name!r} has no `run`: declare its route by hand")
        return await serve(path, text, request, response)

    return predict
