"""The one table from lab errors to HTTP statuses, with the reason in the body."""

import math

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse


class LabError(Exception):
    """An error a client should see; `code` is machine-readable, `message` is for people."""

    status = 500
    code = "internal"

    def __init__(self, message: str, retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.retry_after_s = retry_after_s


class BoxFull(LabError):
    """Every seat is taken: the box as a whole is full (not a per-client rate limit)."""

    status, code = 429, "box_full"


class JobQueueFull(LabError):
    status, code = 429, "job_queue_full"


class WaitedTooLong(LabError):
    status, code = 503, "waited_too_long"


class JobNotFound(LabError):
    status, code = 404, "job_not_found"


class InferenceFailed(LabError):
    status, code = 503, "inference_failed"


class MemoryWouldNotFit(LabError):
    """Naive guard: one more inference would push the process past the memory cap."""

    status, code = 503, "memory_would_not_fit"


class ClientGone(LabError):
    """The client hung up while waiting; nobody reads this answer (nginx's 499)."""

    status, code = 499, "client_gone"


class InvalidReview(LabError):
    status, code = 422, "invalid_review"


class InvalidJob(LabError):
    """A ticket option out of bounds (e.g. `max_time_in_queue_s`)."""

    status, code = 422, "invalid_job"


class WebhookRefused(LabError):
    """The webhook target is not allowed (scheme, unresolvable, or a private address: SSRF guard)."""

    status, code = 422, "webhook_refused"


class StoreUnavailable(LabError):
    """The job store is gone (sqlite file deleted or replaced) or unreachable (Redis): a ticket
    accepted now would be lost, so none is."""

    status, code = 503, "store_unavailable"


class IdempotencyConflict(LabError):
    """The Idempotency-Key was already used with a different body."""

    status, code = 409, "idempotency_key_reused"


class JobAlreadyFinished(LabError):
    status, code = 409, "job_already_finished"


def retry_after_header(seconds: float) -> str:
    """Whole seconds, rounded up, never below 1: a hint of 0 invites a stampede."""
    return str(max(1, math.ceil(seconds)))


def error_response(exc: LabError) -> JSONResponse:
    body: dict[str, object] = {"error": exc.code, "detail": exc.message}
    headers = {}
    if exc.retry_after_s is not None:
        headers["Retry-After"] = retry_after_header(exc.retry_after_s)
        body["retry_after_s"] = int(headers["Retry-After"])
    return JSONResponse(body, status_code=exc.status, headers=headers)


def install_error_handlers(app: FastAPI) -> None:
    async def handle(_: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, LabError)
        return error_response(exc)

    app.add_exception_handler(LabError, handle)
