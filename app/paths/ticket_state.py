"""What the three ticket roles share while they run: the change signal, and which job runs on this box."""

import asyncio
import uuid
from dataclasses import dataclass

from app.engine.model import Ranking
from app.jobs.models import Job
from app.jobs.watch import StoreWatcher, Versioned


@dataclass(frozen=True)
class Scored:
    """One ticket's run on the lane, through the cache: what `lifecycle.done` writes into the job."""

    ranking: Ranking
    infer_s: float
    started_at: float  # wall clock (epoch s) when inference began, after any wait behind other paths


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
    """This box's worker identity and the one job it runs now, so a cancel can stop it at once.

    It also says where that run stands on the lane, because a claimed job is in no backlog until
    the lane has it: an ETA read in that gap (the hand-over) would leave its time out.
    """

    def __init__(self) -> None:
        self.owner = uuid.uuid4().hex[:12]  # this box's worker, in leases
        self.current: tuple[Job, asyncio.Task[Scored]] | None = None
        self.on_lane = False  # handed to the lane: its estimate is in the lane's backlog now
        self.started: float | None = None  # time.monotonic() when its inference began (set on the lane thread)

    def begin(self, job: Job, inference: asyncio.Task[Scored]) -> None:
        self.current = (job, inference)
        self.on_lane, self.started = False, None

    def claimed_chars(self) -> int | None:
        """The characters of a run claimed here but not yet handed to the lane (None if there is none)."""
        if self.current is None or self.on_lane:
            return None
        return self.current[0].chars

    def stop(self, job_id: str) -> None:
        if self.current is not None and self.current[0].id == job_id:
            self.current[1].cancel()  # running here: stop waiting for the lane now
