"""Path 4: submit a review for a ticket, ask how it stands, follow it (or many) as events, or cancel it."""

import asyncio
import json
import math
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing
from typing import Annotated

from fastapi import APIRouter, Depends, Header, Query, Request, Response
from fastapi.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

from app.api.deps import get_lab
from app.contract.openapi import INPUT_ERRORS, answer, answers
from app.contract.responses import server_timing
from app.contract.schema import MAX_FOLLOWED_JOBS, MAX_IDEMPOTENCY_KEY_CHARS, JobIn, JobOut, check_text, valid_unicode
from app.door.connections import ConnectionGuard, LiveSeat
from app.door.drain import until_set
from app.errors import JOB_NOT_FOUND, SHUTTING_DOWN, InvalidJob, TooManyConnections, error_body
from app.jobs.models import JobStatus
from app.paths.ticket_follow import JobMissing
from app.paths.ticket_roles import Tickets
from app.paths.tickets import JobRequest, Ticket

router = APIRouter(prefix="/api/queue", tags=["tickets"])
TICKET_HEADERS = ("Location", "X-Cache", "Server-Timing", "Idempotent-Replayed")
NO_SUCH_JOB = answer(404, "No such job")
LIVE_FULL = answer(503, "Every live seat (event streams, WebSockets) is taken: poll instead", "Retry-After")


async def job_request(
    job: JobIn,
    request: Request,
    idempotency_key: Annotated[
        str | None,
        # The pattern only documents the rule (at least one non-space character); the check below
        # enforces it with its own message.
        Header(max_length=MAX_IDEMPOTENCY_KEY_CHARS, json_schema_extra={"pattern": r"\S"}),
    ] = None,
) -> JobRequest:
    text = check_text(job.text, get_lab(request).settings.max_text_chars)
    if job.webhook_url is not None:
        valid_unicode(job.webhook_url, "webhook_url", InvalidJob)
    if idempotency_key is not None and not idempotency_key.strip():  # else one key shared by every client
        raise InvalidJob("`Idempotency-Key` is empty; send a unique key (e.g. a UUID) or leave the header out.")
    return JobRequest(text, job.webhook_url, job.max_time_in_queue_s, idempotency_key)


def tickets_of(request: Request) -> Tickets:
    return get_lab(request).path("tickets", Tickets)


def eta_ms_up(seconds: float) -> float:
    """Rounded up to the millisecond: a promise never reads 0 while work remains (tiny models take ~ms)."""
    return math.ceil(seconds * 1000) / 1000


def ticket_body(ticket: Ticket) -> JobOut:
    eta = None if ticket.eta_seconds is None else eta_ms_up(ticket.eta_seconds)
    return JobOut.of(ticket.job, position=ticket.position, eta_seconds=eta)


def ticket_headers(ticket: Ticket) -> dict[str, str]:
    job = ticket.job
    headers = {"Location": f"/api/queue/jobs/{job.id}", "X-Cache": "hit" if ticket.cache_hit else "miss"}
    if job.status is JobStatus.DONE and job.waited_ms is not None:
        headers["Server-Timing"] = server_timing(job.waited_ms / 1000, (job.inference_ms or 0.0) / 1000)
    if ticket.replayed:
        headers["Idempotent-Replayed"] = "true"
    return headers


def answered(ticket: Ticket, response: Response) -> JobOut:
    response.headers.update(ticket_headers(ticket))
    return ticket_body(ticket)


def sse_event(item: Ticket | JobMissing | None, event_id: int) -> str:
    """One server-sent event: `status` with the GET body as data, `missing` for a job that does not
    exist (any more), or a keep-alive comment."""
    if item is None:
        return ": still waiting\n\n"
    if isinstance(item, JobMissing):
        missing = {"job_id": item.job_id, **error_body(JOB_NOT_FOUND, f"No job with id {item.job_id!r}.")}
        return f"id: {event_id}\nevent: missing\ndata: {json.dumps(missing, ensure_ascii=False)}\n\n"
    data = json.dumps(ticket_body(item).model_dump(mode="json"), ensure_ascii=False)
    return f"id: {event_id}\nevent: status\ndata: {data}\n\n"


def shutdown_event(event_id: int) -> str:
    """The last event of a stream the box ends because it is shutting down."""
    body = error_body(SHUTTING_DOWN, "The box is shutting down; reconnect to follow your tickets (they are kept).")
    return f"id: {event_id}\nevent: shutdown\ndata: {json.dumps(body, ensure_ascii=False)}\n\n"


def live_seat(request: Request) -> LiveSeat:
    """An event stream holds its connection like a WebSocket: it takes a live seat or is refused (503)."""
    guard: ConnectionGuard = request.app.state.connections
    seat = guard.live_seat()
    if seat is None:
        raise TooManyConnections(
            f"{guard.max_live} live connections (event streams and WebSockets) are open; poll GET /api/queue/jobs/ID.",
            retry_after_s=5,
        )
    return seat


class LiveStreamingResponse(StreamingResponse):
    """Gives its live seat back however the stream ends, sent whole, cut, or never started."""

    def __init__(self, seat: LiveSeat, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.seat = seat

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self.seat.release()


def sse_response(
    items: AsyncGenerator[Ticket | JobMissing | None, None], drain: asyncio.Event, seat: LiveSeat
) -> StreamingResponse:
    """A text/event-stream of `items`, numbered; it ends when they do, or with `event: shutdown`
    once the box drains (app/door/drain.py).

    `items` is closed however the stream stops, so a client that left stops the work behind it.
    """

    async def stream() -> AsyncIterator[str]:
        yield "retry: 1000\n\n"
        event_id = 0
        async with aclosing(items):
            async for item in until_set(items, drain):
                event_id += item is not None
                yield sse_event(item, event_id)
        if drain.is_set():
            yield shutdown_event(event_id + 1)

    headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
    return LiveStreamingResponse(seat, stream(), media_type="text/event-stream", headers=headers)


@router.post(
    "/jobs",
    status_code=202,
    response_model=JobOut,
    responses=answers(
        answer(202, "A ticket: its id, position and ETA", *TICKET_HEADERS),
        INPUT_ERRORS,
        answer(
            422,
            "Blank, invisible, overlong or malformed review, an empty Idempotency-Key, or a refused `webhook_url`"
            " (webhooks off on this box, or a host that is not public or does not resolve)",
        ),
        answer(409, "Idempotency-Key already used with a different body"),
        answer(429, "Too many tickets waiting (over {queue_max_jobs}); see Retry-After", "Retry-After"),
    ),
    summary="④ tickets: get a ticket at once",
)
async def submit_job(job: Annotated[JobRequest, Depends(job_request)], request: Request, response: Response) -> JobOut:
    """Answers 202 at once with a ticket id, your position and an ETA; ask again later.

    The same `Idempotency-Key` with the same body returns the same ticket.
    """
    return answered(await tickets_of(request).service.submit(job), response)


@router.get(
    "/jobs/{job_id}",
    response_model=JobOut,
    responses=answers(answer(200, "How the ticket stands", *TICKET_HEADERS), NO_SUCH_JOB),
    summary="④ ticket status",
)
async def get_job(job_id: str, request: Request, response: Response) -> JobOut:
    """queued (with position and ETA), running, done (with the topics), failed, expired or canceled."""
    return answered(await tickets_of(request).service.status(job_id), response)


@router.delete(
    "/jobs/{job_id}",
    response_model=JobOut,
    responses=answers(
        answer(200, "Canceled", "Location", "X-Cache"), NO_SUCH_JOB, answer(409, "The job has already ended")
    ),
    summary="④ cancel a ticket",
)
async def cancel_job(job_id: str, request: Request, response: Response) -> JobOut:
    """A queued job never reaches the model; a running one is marked canceled and its result discarded."""
    return answered(await tickets_of(request).service.cancel(job_id), response)


@router.get(
    "/jobs/{job_id}/events",
    responses=answers(
        {200: {"content": {"text/event-stream": {}}, "description": "Server-sent events"}}, NO_SUCH_JOB, LIVE_FULL
    ),
    summary="④ follow a ticket as server-sent events",
)
async def job_events(job_id: str, request: Request) -> StreamingResponse:
    """`event: status` with the same JSON as GET on every change; the stream ends after a terminal state."""
    lab = get_lab(request)
    tickets = lab.path("tickets", Tickets)
    await tickets.service.status(job_id)  # an unknown job is a plain 404, not an empty stream
    return sse_response(tickets.follower.follow(job_id), lab.draining, live_seat(request))


@router.get(
    "/events",
    responses=answers(
        {200: {"content": {"text/event-stream": {}}, "description": "Server-sent events"}},
        answer(404, "None of the listed jobs exists"),
        answer(422, "No job_id, or more than {max_followed}"),
        LIVE_FULL,
    ),
    summary="④ follow many tickets as one stream of server-sent events",
)
async def jobs_events(
    request: Request,
    job_id: Annotated[
        list[str],
        Query(min_length=1, max_length=MAX_FOLLOWED_JOBS, description="Repeat for each job: ?job_id=a&job_id=b"),
    ],
) -> StreamingResponse:
    """The per-job `status` events of every listed job on one connection (each JSON has its `job_id`);
    `event: missing` for a listed job that does not exist; the stream ends once every job is terminal.

    A browser has only six connections per host: one stream per ticket would take them all.
    """
    lab = get_lab(request)
    seat = live_seat(request)
    try:
        items = await lab.path("tickets", Tickets).follower.follow_many(job_id)
    except BaseException:
        seat.release()
        raise
    return sse_response(items, lab.draining, seat)
