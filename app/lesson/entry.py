"""One request as the class view draws it: who sent it, on which path, when it came and was answered, what it got.

Everything here is read from what the request already carried or the path already said: the student's cookie
(app/contract/student.py), the status, Server-Timing's wait and infer, ②'s Seat-Hold-Result, ④'s Location,
and the refusal's code and reason the error handler noted in the request's state (app/contract/error_handlers.py).
"""

import re
from dataclasses import dataclass
from typing import Any

from starlette.types import Message, Scope

from app.contract import student
from app.contract.error_handlers import NOTED_ERROR
from app.errors import BY_STATUS, WAITED_TOO_LONG

__all__ = ["COLUMNS", "Entry", "outcome", "student_of"]

DURATION = re.compile(rb"dur=([0-9.]+)")
TICKET = re.compile(rb"^/api/queue/jobs/([A-Za-z0-9_-]{1,64})$")
REFUSED = (429, 503)


@dataclass(slots=True, eq=False)
class Entry:
    """Times are epoch seconds (a record outlives the process that wrote it); `version` orders changes."""

    id: int
    student: str  # the lab_student key, or "address:<ip>" for a client without one
    path: str
    arrived: float
    incarnation: int  # the box's incarnation that received it: one that ended unanswered was cut by a death
    answered: float | None = None
    status: int | None = None
    error: str | None = None  # the error shape's code (box_full, invalid_review, …)
    reason: str | None = None  # a refusal's own reason (seats_full, waited_too_long, …)
    wait_ms: float | None = None
    infer_ms: float | None = None
    hold: str | None = None  # ②'s Seat-Hold-Result: what a returner's held seat got (seated, expired, …)
    ticket: str | None = None  # ④'s job id, from the 202's Location
    ticket_status: str | None = None  # the ticket's end, as this box's worker wrote it (done)
    ticket_end: float | None = None
    cut: bool = False  # never answered: the box died while it was in (found by the next incarnation)
    version: int = 0

    def answer_started(self, message: Message, scope: Scope) -> None:
        """The response's head: status, Server-Timing, Seat-Hold-Result, Location, and the noted error."""
        self.status = status = int(message["status"])
        for name, value in message.get("headers", ()):
            name = name.lower()
            if name == b"server-timing":
                self.wait_ms, self.infer_ms = timing(value)
            elif name == b"seat-hold-result":
                self.hold = value.decode("latin-1")[:16]
            elif name == b"location" and (found := TICKET.match(value)):
                self.ticket = found.group(1).decode("ascii")
        if status >= 400:
            noted = scope.get("state", {}).get(NOTED_ERROR)
            kind = BY_STATUS.get(status)
            self.error, self.reason = noted if noted is not None else (kind.code if kind else None, None)

    def row(self) -> tuple[Any, ...]:
        """The columns of COLUMNS, in order: the file's row and the CSV's."""
        return tuple(getattr(self, column) for column in COLUMNS)

    @classmethod
    def from_row(cls, row: tuple[Any, ...]) -> "Entry":
        values = dict(zip(COLUMNS, row, strict=True))
        values["cut"] = bool(values["cut"])
        return cls(**values)


COLUMNS = (
    "id", "student", "path", "arrived", "incarnation", "answered", "status", "error", "reason", "wait_ms",
    "infer_ms", "hold", "ticket", "ticket_status", "ticket_end", "cut",
)  # fmt: skip


def timing(value: bytes) -> tuple[float | None, float | None]:
    """Server-Timing's `wait` and `infer` durations in ms (app/contract/responses.py writes them)."""
    wait = infer = None
    for part in value.split(b","):
        metric, _, params = part.strip().partition(b";")
        found = DURATION.search(params)
        if found is None:
            continue
        try:
            ms = float(found.group(1))
        except ValueError:
            continue
        if metric == b"wait":
            wait = ms
        elif metric == b"infer":
            infer = ms
    return wait, infer


def student_of(scope: Scope) -> str:
    """The page's or burst.py's student key; a client without one is its address (several behind one NAT share it)."""
    key = student.key_of(scope)
    if key is not None:
        return key
    client = scope.get("client")
    return f"address:{client[0] if client else 'unknown'}"


def outcome(entry: Entry) -> str:
    """What the view colours: served, refused (its reason beside it), late (waited past the deadline), gone (the
    client hung up), error (bad input, a bug), cut (by a death), waiting (no answer yet)."""
    status = entry.status
    if status is None:
        return "cut" if entry.cut else "waiting"
    if 200 <= status < 300:
        return "served"
    if entry.error == WAITED_TOO_LONG.code:
        return "late"
    if status in REFUSED and entry.reason is not None:
        return "refused"
    if status == 499:
        return "gone"
    return "error"
