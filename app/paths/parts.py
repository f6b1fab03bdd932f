"""What a path is built from (the lab's shared parts) and what the lab may ask of it beyond `spec` and `load()`.

Each path module offers `build(parts) -> LabPath` (the registry's `PathSpec.module` names the module), so
app/lab.py builds every registered path the same way and names none. A path that starts something of its own
(a task, a worker) says so by the methods below, which the lab looks for: `start()` once every path is built,
`stop()` at the lab's end, `alive` for /health, `drain()` at SIGTERM, `inferring` while its work runs beside
the lane. `build` itself starts nothing, so a test may build a path and leave it idle.
"""

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from app.engine.lane import InferenceLane
from app.engine.model import Scorer
from app.jobs.store import JobStore
from app.jobs.webhooks import WebhookDispatcher
from app.memory.guard import MemoryGuard
from app.paths.pipeline import Pipeline
from app.settings import Settings


@dataclass(frozen=True, slots=True)
class Parts:
    """The lab's long-lived parts a path may use, built once before any path."""

    settings: Settings
    scorer: Scorer
    lane: InferenceLane
    pipeline: Pipeline
    store: JobStore
    guard: MemoryGuard | None  # ①'s, measured at start-up; None when off
    webhooks: WebhookDispatcher | None = None


@runtime_checkable
class Starts(Protocol):
    """A path with something to run of its own (a loop, a worker), started by the lab once every path is built."""

    def start(self) -> None: ...


@runtime_checkable
class Stops(Protocol):
    """A path with something running of its own: stopped at the lab's end, in reverse order of building."""

    async def stop(self) -> None: ...


@runtime_checkable
class Lives(Protocol):
    """A path whose own task can die: the lab is unhealthy once it has."""

    @property
    def alive(self) -> bool: ...


@runtime_checkable
class Drains(Protocol):
    """A path that takes work on its own (tickets): it stops taking more at SIGTERM."""

    def drain(self) -> None: ...


@runtime_checkable
class InfersBeside(Protocol):
    """A path whose inference runs beside the lane (①): the box is busy while it does (app/memory/give_back.py)."""

    @property
    def inferring(self) -> bool: ...
