"""Path 4: submit a review for a ticket, then ask how it stands."""

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from app.api.deps import INPUT_ERRORS, ReviewText, get_lab
from app.jobs.models import JobStatus
from app.responses import server_timing
from app.strategies.tickets import Ticket

router = APIRouter(prefix="/api/queue", tags=["tickets"])


class JobOut(BaseModel):
    job_id: str
    status: JobStatus
    position: int | None = Field(None, description="Jobs ahead of this one, the running one included")
    eta_seconds: float | None = Field(None, description="Estimated seconds until done, from measured service time")
    result: list[dict[str, Any]] | None = None
    error: str | None = None
    waited_ms: float | None = None
    inference_ms: float | None = None
    attempts: int = 0


def ticket_body(ticket: Ticket) -> dict[str, Any]:
    job = ticket.job
    return JobOut(
        job_id=job.id,
        status=job.status,
        position=ticket.position,
        eta_seconds=None if ticket.eta_seconds is None else round(ticket.eta_seconds, 2),
        result=job.result,
        error=job.error,
        waited_ms=job.waited_ms,
        inference_ms=job.inference_ms,
        attempts=job.attempts,
    ).model_dump(mode="json")


def ticket_headers(ticket: Ticket) -> dict[str, str]:
    job = ticket.job
    headers = {"Location": f"/api/queue/jobs/{job.id}", "X-Cache": "hit" if ticket.cache_hit else "miss"}
    if job.status is JobStatus.DONE and job.waited_ms is not None:
        headers["Server-Timing"] = server_timing(job.waited_ms / 1000, (job.inference_ms or 0.0) / 1000)
    return headers


@router.post(
    "/jobs",
    status_code=202,
    response_model=JobOut,
    responses={**INPUT_ERRORS, 429: {"description": "Too many tickets waiting; see Retry-After"}},
    summary="④ tickets: get a ticket at once",
)
async def submit_job(text: ReviewText, request: Request) -> JSONResponse:
    """Answers 202 at once with a ticket id, your position and an ETA; ask again later."""
    ticket = await get_lab(request).tickets.submit(text)
    return JSONResponse(ticket_body(ticket), status_code=202, headers=ticket_headers(ticket))


@router.get(
    "/jobs/{job_id}", response_model=JobOut, responses={404: {"description": "No such job"}}, summary="④ ticket status"
)
async def get_job(job_id: str, request: Request) -> JSONResponse:
    """queued (with position and ETA), running, done (with the topics) or failed."""
    ticket = await get_lab(request).tickets.status(job_id)
    return JSONResponse(ticket_body(ticket), headers=ticket_headers(ticket))
