"""The three ticket roles' small configs, built from Settings here only.

Usage: `service_cfg, worker_cfg, follow_cfg = ticket_configs(settings)`.
"""

from dataclasses import dataclass

from app.settings import Settings

MIN_TIME_IN_QUEUE_S = 1.0  # the shortest wait a ticket may ask for, in seconds


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
