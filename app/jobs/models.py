"""A ticket job's record: what the client polls, what the timing bars need, what a crash must not lose."""

import time
import uuid
from dataclasses import asdict, dataclass, field, fields
from enum import StrEnum
from typing import Any

# A done job's result, `{"topics": [...]}` (best first), the shape the handout and the sync
# paths use; the same dict goes out in GET, in events and as the webhook's `output`.
TicketResult = dict[str, list[dict[str, Any]]]


class JobStatus(StrEnum):
    QUEUED = "queued"  # accepted, waiting for a worker (or for its retry time)
    RUNNING = "running"  # claimed by a worker under a lease
    DONE = "done"  # finished; `result` holds {"topics": [...]}
    FAILED = "failed"  # gave up; `error` says why
    EXPIRED = "expired"  # waited in the queue past its deadline; never reached the model
    CANCELED = "canceled"  # canceled by the client; a result that came late was discarded

    @property
    def terminal(self) -> bool:
        """Terminal states never change again (every store enforces it)."""
        return self not in (JobStatus.QUEUED, JobStatus.RUNNING)


class WebhookState(StrEnum):
    PENDING = "pending"  # a delivery is due at `webhook_next_at`
    DELIVERED = "delivered"  # the receiver answered 2xx
    FAILED = "failed"  # gave up after the last attempt; `webhook_error` says why


@dataclass(slots=True)
class Job:
    text: str
    id: str = field(default_factory=lambda: uuid.uuid4().hex)
    status: JobStatus = JobStatus.QUEUED
    # Wall-clock epochs, because a record outlives the process that wrote it and is
    # shared between boxes: a monotonic clock means nothing to another process.
    enqueued_at: float = field(default_factory=time.time)
    started_at: float | None = None
    finished_at: float | None = None
    attempts: int = 0  # claims so far: a run lost to a crash counts too
    result: TicketResult | None = None
    error: str | None = None
    inference_ms: float | None = None
    seq: int = 0  # place in the queue, given by the store when added
    # Jobs queued or running when this one was added (its position in the 202), counted by
    # the store in the same atomic step as the insert, so a burst of N gets 0..N-1, each once.
    ahead_at_add: int | None = None
    run_at: float = 0.0  # not before this (retry backoff)
    expires_at: float | None = None  # still queued after this → expired
    owner: str | None = None  # the worker holding the lease while running
    lease_until: float | None = None  # the owner must renew before this or lose the job
    idempotency_key: str | None = None
    request_hash: str | None = None
    webhook_url: str | None = None
    webhook_state: WebhookState | None = None
    webhook_attempts: int = 0
    webhook_next_at: float | None = None
    webhook_error: str | None = None
    chars: int = -1  # the review's length, what its inference costs (ETA maths); set from `text`

    def __post_init__(self) -> None:
        if self.chars < 0:
            self.chars = len(self.text)

    @property
    def waited_ms(self) -> float | None:
        if self.started_at is None:
            return None
        return round((self.started_at - self.enqueued_at) * 1000, 1)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Job":
        known = {f.name for f in fields(cls)}
        job = cls(**{k: v for k, v in data.items() if k in known})
        job.status = JobStatus(job.status)
        if isinstance(job.result, list):  # stored before results were {"topics": [...]}
            job.result = {"topics": job.result}
        if job.webhook_state is not None:
            job.webhook_state = WebhookState(job.webhook_state)
        return job


@dataclass(frozen=True, slots=True)
class Expect:
    """What a store must still hold before it accepts a write: compare-and-set, so two
    boxes (or a worker and a reaper) can never both move the same job.

    `owner` + `attempts` name one run of a job; `lapsed_by` asks that its lease has ended.
    """

    status: JobStatus
    owner: str | None = None
    attempts: int | None = None
    lapsed_by: float | None = None
    webhook_attempts: int | None = None

    def holds(self, current: "Job", new: "Job") -> bool:
        """The rule every store applies (the Redis store in Lua, the others in Python)."""
        if current.status is not self.status:
            return False
        if current.status.terminal and new.status is not current.status:
            return False
        if self.owner is not None and current.owner != self.owner:
            return False
        if self.attempts is not None and current.attempts != self.attempts:
            return False
        if self.lapsed_by is not None and (current.lease_until is None or current.lease_until > self.lapsed_by):
            return False
        return self.webhook_attempts is None or current.webhook_attempts == self.webhook_attempts
