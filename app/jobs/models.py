"""A ticket job's record: what the client polls and what the timing bars need."""

import time
import uuid
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class JobStatus(StrEnum):
    QUEUED = "queued"  # accepted, waiting for the worker
    RUNNING = "running"  # on the inference lane now
    DONE = "done"  # finished; `result` holds the topics
    FAILED = "failed"  # gave up; `error` says why

    @property
    def terminal(self) -> bool:
        return self in (JobStatus.DONE, JobStatus.FAILED)


@dataclass(slots=True)
class Job:
    text: str
    id: str = field(default_factory=lambda: uuid.uuid4().hex)
    status: JobStatus = JobStatus.QUEUED
    # Wall-clock epochs, because a record may outlive the process that wrote it.
    enqueued_at: float = field(default_factory=time.time)
    started_at: float | None = None
    finished_at: float | None = None
    attempts: int = 0
    result: list[dict[str, Any]] | None = None
    error: str | None = None
    inference_ms: float | None = None

    @property
    def waited_ms(self) -> float | None:
        if self.started_at is None:
            return None
        return round((self.started_at - self.enqueued_at) * 1000, 1)
