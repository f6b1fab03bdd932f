"""The one table from error kinds to HTTP statuses and codes, and the lab's errors that name a kind.

Every 4xx/5xx body the lab sends has one shape, `{"error": "<code>", "detail": "<sentence>"}`,
built by `error_body` (app/contract/error_handlers.py turns framework errors into the same shape).
"""

import math
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ErrorKind:
    """One row of the table: the status, the machine-readable code, and what it means (for the docs)."""

    status: int
    code: str
    meaning: str


BAD_REQUEST = ErrorKind(400, "bad_request", "The body could not be decoded (not UTF-8 JSON).")
JOB_NOT_FOUND = ErrorKind(404, "job_not_found", "No such job (never submitted, or cleaned up).")
NOT_FOUND = ErrorKind(404, "not_found", "No such route.")
METHOD_NOT_ALLOWED = ErrorKind(405, "method_not_allowed", "The route exists but not with this method; see Allow.")
IDEMPOTENCY_KEY_REUSED = ErrorKind(409, "idempotency_key_reused", "Idempotency-Key already used with another body.")
JOB_ALREADY_FINISHED = ErrorKind(409, "job_already_finished", "The job has already ended.")
BODY_TOO_LARGE = ErrorKind(413, "body_too_large", "The body is over the size cap.")
URI_TOO_LONG = ErrorKind(414, "uri_too_long", "The request line is over its cap (LAB_MAX_REQUEST_LINE_BYTES).")
HEADERS_TOO_LARGE = ErrorKind(431, "headers_too_large", "Too many header fields, or too many bytes of them.")
INVALID_REQUEST = ErrorKind(422, "invalid_request", "The body or query does not match the schema; see `fields`.")
INVALID_REVIEW = ErrorKind(422, "invalid_review", "The review text is blank, invisible, overlong or not valid Unicode.")
INVALID_JOB = ErrorKind(422, "invalid_job", "A ticket option is out of bounds.")
INVALID_KNOB = ErrorKind(422, "invalid_knob", "No such knob here, or a value out of bounds or under the box's usage.")
NOT_INSTRUCTOR = ErrorKind(403, "instructor_only", "Only the instructor (with the token the box printed) may do this.")
NO_STUDENT_KEY = ErrorKind(400, "no_student_key", "No `lab_student` cookie: open the page (/) first, which gives one.")
INVALID_NICKNAME = ErrorKind(422, "invalid_nickname", "A nickname is too long, or has a control or format character.")
WEBHOOK_REFUSED = ErrorKind(422, "webhook_refused", "The webhook target is not allowed (scheme, address, or off).")
BOX_FULL = ErrorKind(429, "box_full", "The box is full; see Retry-After.")
JOB_QUEUE_FULL = ErrorKind(429, "job_queue_full", "Too many tickets waiting; see Retry-After.")
CLIENT_GONE = ErrorKind(499, "client_gone", "The client hung up while waiting; nobody reads this answer.")
INTERNAL = ErrorKind(500, "internal", "A bug in the lab; the server log has the traceback.")
WAITED_TOO_LONG = ErrorKind(503, "waited_too_long", "Waited too long for the model; see Retry-After.")
INFERENCE_FAILED = ErrorKind(503, "inference_failed", "The model failed on this review.")
MEMORY_WOULD_NOT_FIT = ErrorKind(503, "memory_would_not_fit", "One more inference would not fit in memory.")
UNHEALTHY = ErrorKind(503, "unhealthy", "The model is not loaded or the lane or ticket worker has stopped.")
STORE_UNAVAILABLE = ErrorKind(503, "store_unavailable", "The job store is gone or unreachable; no ticket is taken.")
WEBSOCKET_ONLY = ErrorKind(426, "websocket_only", "This address speaks WebSocket only (/api/stats/live).")
SHUTTING_DOWN = ErrorKind(503, "shutting_down", "The box is shutting down; reconnect to follow your tickets.")
TOO_MANY_CONNECTIONS = ErrorKind(503, "too_many_connections", "Every connection the box allows is in use; retry.")
# Answered by the classroom front (app/front/nginx.conf), never by the box: one address's (or the class's) limit.
FRONT_LIMIT = ErrorKind(429, "front_limit", "Too many requests at once or too fast from one address; see Retry-After.")

TABLE: tuple[ErrorKind, ...] = (
    BAD_REQUEST,
    JOB_NOT_FOUND,
    NOT_FOUND,
    METHOD_NOT_ALLOWED,
    IDEMPOTENCY_KEY_REUSED,
    JOB_ALREADY_FINISHED,
    BODY_TOO_LARGE,
    URI_TOO_LONG,
    HEADERS_TOO_LARGE,
    INVALID_REQUEST,
    INVALID_REVIEW,
    INVALID_JOB,
    INVALID_KNOB,
    NOT_INSTRUCTOR,
    NO_STUDENT_KEY,
    INVALID_NICKNAME,
    WEBHOOK_REFUSED,
    BOX_FULL,
    JOB_QUEUE_FULL,
    CLIENT_GONE,
    INTERNAL,
    WAITED_TOO_LONG,
    INFERENCE_FAILED,
    MEMORY_WOULD_NOT_FIT,
    UNHEALTHY,
    STORE_UNAVAILABLE,
    WEBSOCKET_ONLY,
    SHUTTING_DOWN,
    TOO_MANY_CONNECTIONS,
    FRONT_LIMIT,
)

# Statuses the framework raises itself (routing, body reading), and the kind each becomes.
BY_STATUS: dict[int, ErrorKind] = {
    400: BAD_REQUEST,
    404: NOT_FOUND,
    405: METHOD_NOT_ALLOWED,
    413: BODY_TOO_LARGE,
    422: INVALID_REQUEST,
    500: INTERNAL,
}


class LabError(Exception):
    """An error a client should see: its `kind` gives status and code, `message` is for people."""

    kind = INTERNAL

    def __init__(
        self,
        message: str,
        retry_after_s: float | None = None,
        *,
        headers: dict[str, str] | None = None,
        extra: dict[str, object] | None = None,
        reason: str | None = None,
        waited_s: float | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.retry_after_s = retry_after_s
        self.headers = headers or {}  # e.g. ②'s Seat-Hold token beside Retry-After
        self.extra = extra or {}  # keys added to the one error shape
        # A refusal's own reason, as /api/stats and the metrics count it (box_full from ② is seats_full,
        # from ③ queue_too_long), and how long the request waited before it (Server-Timing `wait`).
        self.reason = reason
        self.waited_s = waited_s

    @property
    def status(self) -> int:
        return self.kind.status

    @property
    def code(self) -> str:
        return self.kind.code


class BoxFull(LabError):
    """Every seat is taken: the box as a whole is full (not a per-client rate limit)."""

    kind = BOX_FULL


class JobQueueFull(LabError):
    kind = JOB_QUEUE_FULL


class WaitedTooLong(LabError):
    kind = WAITED_TOO_LONG


class JobNotFound(LabError):
    kind = JOB_NOT_FOUND


class InferenceFailed(LabError):
    kind = INFERENCE_FAILED


class MemoryWouldNotFit(LabError):
    """Naive guard: one more inference would push the process past the memory cap."""

    kind = MEMORY_WOULD_NOT_FIT


class ClientGone(LabError):
    """The client hung up while waiting; nobody reads this answer (nginx's 499)."""

    kind = CLIENT_GONE


class InvalidReview(LabError):
    kind = INVALID_REVIEW


class InvalidJob(LabError):
    """A ticket option out of bounds (e.g. `max_time_in_queue_s`)."""

    kind = INVALID_JOB


class InvalidKnob(LabError):
    kind = INVALID_KNOB


class NotInstructor(LabError):
    """A knob change without the instructor token: students can read the knobs, never turn them."""

    kind = NOT_INSTRUCTOR


class NoStudentKey(LabError):
    """A student's own request (a nickname) without the page's key: the class view could not tell who it is."""

    kind = NO_STUDENT_KEY


class InvalidNickname(LabError):
    kind = INVALID_NICKNAME


class WebhookRefused(LabError):
    """The webhook target is not allowed (scheme, unresolvable, or a private address: SSRF guard)."""

    kind = WEBHOOK_REFUSED


class StoreUnavailable(LabError):
    """The job store is gone (sqlite file deleted or replaced) or unreachable (Redis): a ticket
    accepted now would be lost, so none is."""

    kind = STORE_UNAVAILABLE


class IdempotencyConflict(LabError):
    """The Idempotency-Key was already used with a different body."""

    kind = IDEMPOTENCY_KEY_REUSED


class TooManyConnections(LabError):
    """Every live seat (WebSockets and event streams) is taken: app/door/connections.py."""

    kind = TOO_MANY_CONNECTIONS


class JobAlreadyFinished(LabError):
    kind = JOB_ALREADY_FINISHED


def retry_after_header(seconds: float) -> str:
    """Whole seconds, rounded up, never below 1: a hint of 0 invites a stampede."""
    return str(max(1, math.ceil(seconds)))


def error_body(kind: ErrorKind, detail: str, **extra: object) -> dict[str, object]:
    """The one error shape; `extra` adds keys (never replaces `error` or `detail`)."""
    return {"error": kind.code, "detail": detail, **extra}
