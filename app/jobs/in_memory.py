"""Jobs in this process's memory: fast, and gone when the process dies (the lab's lesson)."""

import copy
import itertools

from app.jobs.models import Expect, Job, JobStatus, WebhookState
from app.jobs.store import Ahead, QueueFull, claimed, empty_counts, is_due, is_overdue


class MemoryJobStore:
    """Every method runs without awaiting, so each is atomic on the event loop.

    Records are copied in and out, so a caller's edits count only through `replace`,
    exactly as with the stores that serialize.
    """

    def __init__(self) -> None:
        self._jobs: dict[str, Job] = {}
        self._by_key: dict[str, str] = {}
        self._seq = itertools.count(1)
        self._workers: dict[str, float] = {}
        self._version = 0

    async def add(self, job: Job, max_queued: int | None = None) -> tuple[Job, bool]:
        if job.idempotency_key is not None and job.idempotency_key in self._by_key:
            return copy.deepcopy(self._jobs[self._by_key[job.idempotency_key]]), False
        if job.status is JobStatus.QUEUED and max_queued is not None:
            queued = sum(1 for j in self._jobs.values() if j.status is JobStatus.QUEUED)
            if queued >= max_queued:
                raise QueueFull(queued)
        if job.status is JobStatus.QUEUED:  # no await since the key check: nothing can slip in
            job.ahead_at_add = sum(1 for j in self._jobs.values() if j.status in (JobStatus.QUEUED, JobStatus.RUNNING))
        job.seq = next(self._seq)
        self._version += 1
        self._jobs[job.id] = copy.deepcopy(job)
        if job.idempotency_key is not None:
            self._by_key[job.idempotency_key] = job.id
        return copy.deepcopy(job), True

    async def get(self, job_id: str) -> Job | None:
        job = self._jobs.get(job_id)
        return None if job is None else copy.deepcopy(job)

    async def get_by_idempotency_key(self, key: str) -> Job | None:
        job_id = self._by_key.get(key)
        return None if job_id is None else await self.get(job_id)

    async def claim_next(self, owner: str, lease_s: float, now: float) -> Job | None:
        due = [job for job in self._queued() if is_due(job, now)]
        if not due:
            return None
        self._version += 1
        return copy.deepcopy(claimed(due[0], owner, lease_s, now))

    async def replace(self, job: Job, expect: Expect) -> bool:
        current = self._jobs.get(job.id)
        if current is None or not expect.holds(current, job):
            return False
        self._version += 1
        self._jobs[job.id] = copy.deepcopy(job)
        return True

    async def heartbeat(self, owner: str, lease_s: float, now: float) -> set[str]:
        self._workers[owner] = now + lease_s
        held = set()
        for job in self._jobs.values():
            if job.status is JobStatus.RUNNING and job.owner == owner:
                job.lease_until = now + lease_s
                held.add(job.id)
        return held

    async def lapsed(self, now: float) -> list[Job]:
        return [
            copy.deepcopy(job)
            for job in self._jobs.values()
            if job.status is JobStatus.RUNNING and job.lease_until is not None and job.lease_until < now
        ]

    async def overdue(self, now: float) -> list[Job]:
        return [copy.deepcopy(job) for job in self._queued() if is_overdue(job, now)]

    async def webhooks_due(self, now: float, limit: int) -> list[Job]:
        due = [
            job
            for job in self._jobs.values()
            if job.webhook_state is WebhookState.PENDING and (job.webhook_next_at or 0.0) <= now
        ]
        due.sort(key=lambda job: job.webhook_next_at or 0.0)
        return [copy.deepcopy(job) for job in due[:limit]]

    async def ahead(self, job_id: str) -> Ahead | None:
        chars = 0
        for index, job in enumerate(self._queued()):
            if job.id == job_id:
                return Ahead(index, chars)
            chars += job.chars
        return None

    async def counts(self) -> dict[str, int]:
        counts = empty_counts()
        for job in self._jobs.values():
            counts[job.status.value] += 1
        return counts

    async def live_workers(self, now: float) -> int:
        self._workers = {owner: until for owner, until in self._workers.items() if until >= now}
        return max(1, len(self._workers))

    async def forget_finished(self, before: float) -> int:
        old = [
            job
            for job in self._jobs.values()
            if job.status.terminal
            and (job.finished_at or job.enqueued_at) < before
            and job.webhook_state is not WebhookState.PENDING
        ]
        self._version += len(old)
        for job in old:
            del self._jobs[job.id]
            if job.idempotency_key is not None:
                self._by_key.pop(job.idempotency_key, None)
        return len(old)

    async def version(self) -> int:
        return self._version

    async def check(self) -> str | None:
        return None  # lives as long as the process that answers

    async def close(self) -> None:
        return None

    def _queued(self) -> list[Job]:
        return sorted((job for job in self._jobs.values() if job.status is JobStatus.QUEUED), key=lambda j: j.seq)
