"""What the three ticket roles share: their small configs (built from Settings here only), the
change signal, and which job runs on this box.

Usage: `service_cfg, worker_cfg, follow_cfg = ticket_configs(settings)`.
"""

import asyncio
import uuid
from dataclasses import dataclass

from app.jobs.models import Job
from app.jobs.watch import StoreWatcher, Versioned
from app.model import Ranking
from app.settings import Settings


@dataclass(frozen=True, slots=True, kw_only=True)
class ServiceConfig:
    """What accepting a ticket needs: the queue cap, the queue-time bounds, whether webhooks are on."""

    queue_max_jobs: int
    time_in_queue_s: float
    time_in_queue_cap_s: float
    webhooks_on: bool
    webhook_allow_private: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkerConfig:
    """What running tickets needs: leases, retries, housekeeping and how often to look at the store."""

    lease_s: float
    keep_s: float
    max_attempts: int
    retry_backoff_s: float
    poll_s: float


@dataclass(frozen=True, slots=True, kw_only=True)
class FollowConfig:
    """Other boxes change a shared store too: followers look again after `poll_s` regardless."""

    poll_s: float


def ticket_configs(settings: Settings) -> tuple[ServiceConfig, WorkerConfig, FollowConfig]:
    service = ServiceConfig(
        queue_max_jobs=settings.queue_max_jobs,
        time_in_queue_s=settings.job_max_time_in_queue_s,
        time_in_queue_cap_s=settings.job_max_time_in_queue_cap_s,
        webhooks_on=settings.webhook_secret is not None,
        webhook_allow_private=settings.webhook_allow_private,
    )
    worker = WorkerConfig(
        lease_s=settings.job_lease_s,
        keep_s=settings.jobs_keep_s,
        max_attempts=settings.job_max_attempts,
        retry_backoff_s=settings.job_retry_backoff_s,
        poll_s=settings.job_poll_s,
    )
    return service, worker, FollowConfig(poll_s=settings.job_poll_s)


class Signals:
    """Wakes the worker and every follower on this box when a job changes here; `watch` also
    wakes followers when another box changes the store (one poll per process, app/jobs/watch.py)."""

    def __init__(self, store: Versioned, poll_s: float) -> None:
        self.wakeup = asyncio.Event()
        self.watch = StoreWatcher(store, poll_s)

    def notify(self) -> None:
        self.wakeup.set()
        self.watch.notify()


class LocalRun:
    """This box's worker identity and the one job it runs now, so a cancel can stop it at once."""

    def __init__(self) -> None:
        self.owner = uuid.uuid4().hex[:12]  # this box's worker, in leases
        self.current: tuple[Job, asyncio.Task[tuple[Ranking, float, float]]] | None = None

    def stop(self, job_id: str) -> None:
        if self.current is not None and self.current[0].id == job_id:
            self.current[1].cancel()  # running here: stop waiting for the lane now
