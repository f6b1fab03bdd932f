"""Path 4, the followers: one ticket's changes as a stream, or many tickets' over one stream."""

import math
import time
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from dataclasses import dataclass

from app.errors import JobNotFound
from app.paths.merge import merged
from app.paths.ticket_config import FollowConfig
from app.paths.ticket_state import Signals
from app.paths.tickets import Ticket, TicketService

PROMISE_SLACK_S = 0.25  # an ETA that drifts less than this is not worth an event


@dataclass(frozen=True, slots=True)
class JobMissing:
    """A followed job that does not exist (any more): never submitted, or already cleaned up."""

    job_id: str


def promise_moved(before: float | None, now: float | None) -> bool:
    """Did the promised finish (the moment the ETA points at) move by more than PROMISE_SLACK_S?

    A stream that sent an ETA and then only reports status changes would keep a stale promise
    while GET gives the new one (a job ahead ended sooner or later than estimated).
    """
    if before is None or now is None:
        return (before is None) != (now is None)
    return abs(now - before) > PROMISE_SLACK_S


class TicketFollower:
    """Reads tickets through the service and wakes when a job changes on any box."""

    def __init__(self, service: TicketService, signals: Signals, config: FollowConfig) -> None:
        self._service = service
        self._signals = signals
        self._config = config

    async def follow(self, job_id: str, keepalive_s: float = 15.0) -> AsyncGenerator[Ticket | None, None]:
        """Each change of status, position or attempts, ending with the terminal state.

        Yields None after `keepalive_s` without a change, so a stream can show it is alive.
        """
        last: tuple[object, ...] | None = None
        promised: float | None = None
        quiet_since = time.monotonic()
        while True:
            since = self._signals.watch.mark()  # before the read: a change after it ends the wait below
            try:
                # One read per change, shared by every stream following this job (app/jobs/watch.py).
                ticket = await self._signals.watch.read(job_id, lambda: self._service.status(job_id))
            except JobNotFound:
                return
            job = ticket.job
            seen = (job.status, ticket.position, job.attempts, job.webhook_state)
            promise = None if ticket.eta_seconds is None else time.monotonic() + ticket.eta_seconds
            if seen != last or promise_moved(promised, promise):
                last, promised, quiet_since = seen, promise, time.monotonic()
                yield ticket
            elif time.monotonic() - quiet_since >= keepalive_s:
                quiet_since = time.monotonic()
                yield None
            if job.status.terminal:
                return
            await self._signals.watch.wait(since, keepalive_s)  # a change on any box, or time for a keep-alive

    async def follow_many(
        self, job_ids: Sequence[str], keepalive_s: float = 15.0
    ) -> AsyncGenerator[Ticket | JobMissing | None, None]:
        """`follow` for several jobs over one stream: every job's changes in its own order, ending
        once each job is terminal or missing.

        One stream instead of one per job, because a browser holds a connection per open stream and
        has only six per host. Raises before anything streams if no listed job exists; an unknown job
        among known ones is reported as JobMissing. Yields None after `keepalive_s` with no change at all.
        How many may be listed is the route's bound (MAX_FOLLOWED_JOBS, in the OpenAPI document).
        """
        wanted = list(dict.fromkeys(job_ids))  # a job listed twice is followed once
        for job_id in wanted:
            if await self._service.exists(job_id):
                break
        else:
            raise JobNotFound(f"None of the {len(wanted)} listed jobs exists.")
        followers = [self._follow_to_end(job_id) for job_id in wanted]
        return merged(followers, quiet_s=keepalive_s, name="ticket-follow")

    async def _follow_to_end(self, job_id: str) -> AsyncIterator[Ticket | JobMissing]:
        """One job's changes; JobMissing if it vanishes (or never was) before a terminal state."""
        last: Ticket | None = None
        async for ticket in self.follow(job_id, keepalive_s=math.inf):  # the merged stream keeps alive
            if ticket is not None:
                last = ticket
                yield ticket
        if last is None or not last.job.status.terminal:
            yield JobMissing(job_id)
