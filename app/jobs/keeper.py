"""Housekeeping every box runs: renew its leases, take back lost jobs, expire stale ones, forget old ones."""

import logging
import time

from app.jobs import lifecycle
from app.jobs.models import Expect, JobStatus
from app.jobs.store import JobStore

log = logging.getLogger(__name__)


class JobKeeper:
    """One round per tick; any box may do the reaping, because each write is conditional."""

    def __init__(
        self,
        store: JobStore,
        *,
        owner: str,
        lease_s: float,
        keep_s: float,
        policy: lifecycle.RetryPolicy,
    ) -> None:
        self._store = store
        self._owner = owner
        self._lease_s = lease_s
        self._keep_s = keep_s
        self._policy = policy

    @property
    def interval_s(self) -> float:
        """Three renewals per lease, so one late tick never costs a live box its job."""
        return min(self._lease_s / 3, 1.0)

    async def tick(self) -> tuple[set[str], int]:
        """Returns the ids this box still holds running, and how many jobs changed state."""
        now = time.time()
        held = await self._store.heartbeat(self._owner, self._lease_s, now)
        changed = 0
        for job in await self._store.lapsed(now):
            fence = Expect(JobStatus.RUNNING, owner=job.owner, attempts=job.attempts, lapsed_by=now)
            if await self._store.replace(lifecycle.lost(job, self._policy, now), fence):
                log.warning("job %s: lease of %s ran out on attempt %d; taken back", job.id, job.owner, job.attempts)
                changed += 1
        for job in await self._store.overdue(now):
            if await self._store.replace(lifecycle.expired(job, now), Expect(JobStatus.QUEUED, attempts=0)):
                changed += 1
        await self._store.forget_finished(now - self._keep_s)
        return held, changed
