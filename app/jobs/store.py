"""Where ticket jobs live: one interface, three backends (memory, sqlite, redis).

The service decides every transition; a store only keeps records and makes each write
atomic and conditional (`Expect`), so a crash or a second box can never run a job twice
at once or change a finished one.
"""

from dataclasses import dataclass
from typing import Protocol

from app.jobs.models import Expect, Job, JobStatus

# How many queued jobs one claim looks at to find one that is due (skipping retries
# still backing off and jobs past their deadline, which the keeper expires).
CLAIM_SCAN = 200


class QueueFull(Exception):
    """`add` refused a queued job: `max_queued` jobs were already waiting."""

    def __init__(self, queued: int) -> None:
        super().__init__(f"{queued} jobs queued")
        self.queued = queued


@dataclass(frozen=True, slots=True)
class Ahead:
    """The queued jobs ahead of one job: how many, and their characters summed (their cost)."""

    jobs: int
    chars: int


class JobStore(Protocol):
    async def add(self, job: Job, max_queued: int | None = None) -> tuple[Job, bool]:
        """Store a new job and give it its `seq` and, if queued, its `ahead_at_add` (jobs queued
        or running at that moment). If its idempotency key is already held, store nothing
        and return the job holding it, with created = False.
        A queued job is refused with QueueFull when `max_queued` already wait: checked
        in the same atomic step as the insert, so a burst cannot slip past the cap."""

    async def get(self, job_id: str) -> Job | None: ...

    async def get_by_idempotency_key(self, key: str) -> Job | None: ...

    async def claim_next(self, owner: str, lease_s: float, now: float) -> Job | None:
        """Atomically take the oldest due queued job and mark it running for `owner`
        (attempts + 1, lease until now + lease_s)."""

    async def replace(self, job: Job, expect: Expect) -> bool:
        """Write `job` whole if the stored one still matches `expect`; False otherwise."""

    async def heartbeat(self, owner: str, lease_s: float, now: float) -> set[str]:
        """Renew `owner`'s leases; return the ids it still holds running (a job missing
        from the answer was canceled or taken away, so its run must stop)."""

    async def lapsed(self, now: float) -> list[Job]:
        """Running jobs whose lease ran out: their owner died or stalled."""

    async def overdue(self, now: float) -> list[Job]:
        """Queued jobs never started whose queue deadline passed."""

    async def webhooks_due(self, now: float, limit: int) -> list[Job]: ...

    async def ahead(self, job_id: str) -> Ahead | None:
        """Queued jobs ahead of this one (0-based) and their summed `chars`, in one read; None if it is not queued."""

    async def counts(self) -> dict[str, int]:
        """Jobs per status, every status present."""

    async def live_workers(self, now: float) -> int:
        """Workers that renewed their heartbeat recently (at least 1 for ETA maths)."""

    async def forget_finished(self, before: float) -> int:
        """Drop terminal jobs finished before `before` (and their idempotency keys)."""

    async def version(self) -> int:
        """A number that grows with every change to a job (add, claim, replace, forget) by any
        box; lease renewals do not count. One cheap read: what `StoreWatcher` polls."""

    async def check(self) -> str | None:
        """None while the store keeps what it is given; else why not, in a sentence. Cheap
        enough for every /health: a stat of the sqlite file, a PING to Redis."""

    async def close(self) -> None: ...


def empty_counts() -> dict[str, int]:
    return {status.value: 0 for status in JobStatus}


def is_due(job: Job, now: float) -> bool:
    """Claimable now: queued, past its retry backoff, and not past its queue deadline."""
    if job.status is not JobStatus.QUEUED or job.run_at > now:
        return False
    return not is_overdue(job, now)


def is_overdue(job: Job, now: float) -> bool:
    """A deadline applies only while a job has never reached the model."""
    return job.status is JobStatus.QUEUED and job.attempts == 0 and job.expires_at is not None and job.expires_at < now


def claimed(job: Job, owner: str, lease_s: float, now: float) -> Job:
    job.status = JobStatus.RUNNING
    job.owner = owner
    job.attempts += 1
    job.started_at = now
    job.lease_until = now + lease_s
    return job
