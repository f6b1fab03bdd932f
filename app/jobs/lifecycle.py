"""The rules of a job's life as pure functions: what the next record is, never how it is stored."""

import copy
from dataclasses import dataclass
from typing import Any

from app.jobs.models import Job, JobStatus, WebhookState

# Failures worth another try: the box ran short (memory, files, time), not the review
# itself. A model error on a given text repeats on every try, so it fails at once.
RETRYABLE = (TimeoutError, ConnectionError, MemoryError, OSError)
MAX_BACKOFF_S = 60.0


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """`RetryPolicy(max_attempts=3, backoff_s=1.0)`: at most 3 claims, waiting 1 s, 2 s, … between."""

    max_attempts: int = 3
    backoff_s: float = 1.0

    def delay_s(self, attempts: int) -> float:
        return min(self.backoff_s * 2.0 ** max(attempts - 1, 0), MAX_BACKOFF_S)


def is_retryable(exc: BaseException) -> bool:
    return isinstance(exc, RETRYABLE)


def _next(job: Job) -> Job:
    return copy.deepcopy(job)


def _ended(job: Job, status: JobStatus, now: float, error: str | None = None) -> Job:
    """Enter a terminal state; a job with a webhook gets its delivery scheduled in the same write."""
    job.status, job.finished_at, job.lease_until = status, now, None
    if error is not None:
        job.error = error
    if job.webhook_url is not None:
        job.webhook_state, job.webhook_next_at = WebhookState.PENDING, now
    return job


def done(job: Job, topics: list[dict[str, Any]], *, inference_ms: float, started_at: float, now: float) -> Job:
    nxt = _next(job)
    nxt.result, nxt.inference_ms, nxt.started_at, nxt.error = {"topics": topics}, inference_ms, started_at, None
    return _ended(nxt, JobStatus.DONE, now)


def failed_once(job: Job, exc: BaseException, policy: RetryPolicy, now: float) -> Job:
    """Back to the queue after a backoff if worth it and attempts remain; else failed for good."""
    reason = f"inference failed: {type(exc).__name__}: {exc}"
    nxt = _next(job)
    if is_retryable(exc) and job.attempts < policy.max_attempts:
        return _requeued(nxt, reason, now + policy.delay_s(job.attempts))
    if is_retryable(exc):
        reason = f"{reason} (gave up after {job.attempts} attempts)"
    return _ended(nxt, JobStatus.FAILED, now, reason)


def lost(job: Job, policy: RetryPolicy, now: float) -> Job:
    """Its owner stopped renewing the lease (crashed or stalled): run it again, within bounds."""
    nxt = _next(job)
    reason = f"the worker running attempt {job.attempts} was lost (lease ran out)"
    if job.attempts < policy.max_attempts:
        return _requeued(nxt, reason, now)
    return _ended(nxt, JobStatus.FAILED, now, f"{reason}; gave up after {job.attempts} attempts")


def released(job: Job) -> Job:
    """A worker shutting down gives its job back to the queue at once."""
    return _requeued(_next(job), job.error, job.run_at)


def _requeued(job: Job, error: str | None, run_at: float) -> Job:
    job.status, job.owner, job.lease_until, job.run_at, job.error = JobStatus.QUEUED, None, None, run_at, error
    return job


def expired(job: Job, now: float) -> Job:
    waited = now - job.enqueued_at
    return _ended(_next(job), JobStatus.EXPIRED, now, f"waited {waited:.1f} s in the queue, past its limit")


def canceled(job: Job, now: float) -> Job:
    was = "before it ran" if job.status is JobStatus.QUEUED else "while it ran; its result is discarded"
    return _ended(_next(job), JobStatus.CANCELED, now, f"canceled by the client {was}")
