"""Where ticket jobs live; the service talks to this interface, never to a backend."""

import time
from collections import Counter, OrderedDict
from typing import Protocol

from app.jobs.models import Job, JobStatus


class JobStore(Protocol):
    async def add(self, job: Job) -> None: ...

    async def get(self, job_id: str) -> Job | None: ...

    async def claim_next(self) -> Job | None:
        """Atomically take the oldest queued job and mark it running (attempts + 1)."""

    async def save(self, job: Job) -> None:
        """Record a running job's terminal state."""

    async def position(self, job_id: str) -> int | None:
        """0-based place among queued jobs; None if not queued."""

    async def queued_count(self) -> int: ...

    async def counts(self) -> dict[str, int]: ...

    async def close(self) -> None: ...


class MemoryJobStore:
    """Jobs in this process's memory: fast, and gone when the process dies."""

    def __init__(self, keep_s: float = 3600.0) -> None:
        self._jobs: dict[str, Job] = {}
        self._queued: OrderedDict[str, None] = OrderedDict()
        self._keep_s = keep_s

    async def add(self, job: Job) -> None:
        self._forget_old()
        self._jobs[job.id] = job
        if job.status is JobStatus.QUEUED:
            self._queued[job.id] = None

    async def get(self, job_id: str) -> Job | None:
        return self._jobs.get(job_id)

    async def claim_next(self) -> Job | None:
        if not self._queued:
            return None
        job_id, _ = self._queued.popitem(last=False)
        job = self._jobs[job_id]
        job.status = JobStatus.RUNNING
        job.started_at = time.time()
        job.attempts += 1
        return job

    async def save(self, job: Job) -> None:
        self._jobs[job.id] = job

    async def position(self, job_id: str) -> int | None:
        if job_id not in self._queued:
            return None
        for index, queued_id in enumerate(self._queued):
            if queued_id == job_id:
                return index
        return None

    async def queued_count(self) -> int:
        return len(self._queued)

    async def counts(self) -> dict[str, int]:
        counted = Counter(job.status.value for job in self._jobs.values())
        return {status.value: counted.get(status.value, 0) for status in JobStatus}

    async def close(self) -> None:
        return None

    def _forget_old(self) -> None:
        cutoff = time.time() - self._keep_s
        old = [j.id for j in self._jobs.values() if j.status.terminal and (j.finished_at or 0) < cutoff]
        for job_id in old:
            del self._jobs[job_id]
