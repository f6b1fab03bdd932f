"""Builds the lab's long-lived parts in order and tears them down in reverse."""

import asyncio
import importlib
import logging
import time
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

from app.engine.cache import CacheSnapshot, ResultCache
from app.engine.lane import InferenceLane, LaneSnapshot
from app.engine.model import Scorer
from app.inside.speed import SpeedLoop, cost_relative_to
from app.inside.stand_in import HeldMemory
from app.jobs.factory import open_store
from app.jobs.store import JobStore
from app.jobs.webhooks import open_webhooks
from app.knobs.board import KnobBoard, KnobsSnapshot
from app.knobs.table import knob_board
from app.lesson.feed import LessonFeed, open_feed
from app.memory.give_back import GiveBack, malloc_trim
from app.memory.guard import open_memory_guard
from app.paths.parts import Drains, InfersBeside, Lives, Parts, Starts, Stops
from app.paths.pipeline import Pipeline, PipelineSnapshot
from app.paths.registry import PATHS, LabPath, Load, PathSpec
from app.paths.ticket_worker import TicketWorker
from app.scorer import calibrate_length, load_scorer, warmup_text
from app.settings import Settings

log = logging.getLogger(__name__)
Owner = TypeVar("Owner")


@dataclass(frozen=True, slots=True)
class LabSnapshot:
    """Every shared part's state and every path's load at one moment (the store's counts are read apart: they
    are async; a path's own numbers beyond its load are read from its owner)."""

    lane: LaneSnapshot
    paths: tuple[PathSpec, ...]  # display order
    loads: dict[str, Load]  # by path name
    cache: CacheSnapshot
    pipeline: PipelineSnapshot
    knobs: KnobsSnapshot


@dataclass(slots=True)
class Lab:
    settings: Settings
    manifest: dict[str, Any]
    lane: InferenceLane
    cache: ResultCache
    pipeline: Pipeline
    store: JobStore
    paths: dict[str, LabPath]  # by name, in display order: each built by its module's `build(parts)`
    knobs: KnobBoard
    speed: SpeedLoop | None = None  # the box's speed loop; None outside the box
    stand_in_bytes: int = 0  # held for the seed's libraries (app/inside/stand_in.py), within the memory shown
    lesson: LessonFeed | None = None  # the class view's record of every path request (LAB_LESSON_RECORD)
    draining: asyncio.Event = field(default_factory=asyncio.Event)  # set once, by drain()

    def path(self, name: str, kind: type[Owner]) -> Owner:
        """The owner of the path called `name`, as the type its route uses (a route knows its own path)."""
        owner = self.paths[name]
        if not isinstance(owner, kind):
            raise TypeError(f"path {name!r} is a {type(owner).__name__}, not a {kind.__name__}")
        return owner

    def drain(self) -> None:
        """SIGTERM (app/serve.py): claim no more tickets and end every event stream now, so the
        server's wait for open connections is only for answers already due (seated ②, batches)."""
        self.draining.set()
        for owner in self.paths.values():
            if isinstance(owner, Drains):
                owner.drain()

    def speed_now(self) -> dict[str, Any] | None:
        """The box's speed loop's one live value (None outside the box)."""
        return None if self.speed is None else self.speed.snapshot()

    @property
    def healthy(self) -> bool:
        return self.lane.alive and all(owner.alive for owner in self.paths.values() if isinstance(owner, Lives))

    @property
    def specs(self) -> tuple[PathSpec, ...]:
        """What its paths are, in display order: what the page, the knobs and the metrics list."""
        return tuple(p.spec for p in self.paths.values())

    @property
    def routes(self) -> dict[str, str]:
        """Submitting route → path name, for LabMiddleware's count of answers."""
        return {p.route: p.name for p in self.specs}

    def snapshot(self) -> LabSnapshot:
        return LabSnapshot(
            lane=self.lane.snapshot(),
            paths=self.specs,
            loads={name: p.load() for name, p in self.paths.items()},
            cache=self.cache.snapshot(),
            pipeline=self.pipeline.snapshot(),
            knobs=self.knobs.snapshot(),
        )


def build_path(spec: PathSpec, parts: Parts) -> LabPath:
    """The path `spec` describes, made by its module's `build(parts)` (the registry names the module)."""
    owner: LabPath = importlib.import_module(spec.builder).build(parts)
    if owner.spec != spec:
        raise TypeError(f"{spec.builder}.build made {owner.spec.name!r}, not {spec.name!r}")
    return owner


def record_ends(lesson: LessonFeed, knobs: KnobBoard, owners: Iterable[LabPath]) -> None:
    """The lesson's record hears of each knob turn and each ticket a path's worker finished on this box."""
    record = lesson.record
    knobs.on_turn = record.knob_turned
    for owner in owners:
        worker = getattr(owner, "worker", None)
        if isinstance(worker, TicketWorker):
            worker.on_done = lambda job: record.ticket_done(
                job.id, job.finished_at or time.time(), job.waited_ms, job.inference_ms
            )


@asynccontextmanager
async def open_lab(
    settings: Settings, scorer: Scorer | None = None, specs: tuple[PathSpec, ...] = PATHS
) -> AsyncIterator[Lab]:
    """Model, lane (warmed up, so the service clock starts from a measurement), then the paths `specs` name."""
    fake = {"name": type(scorer).__name__, "weights": "fake"}
    scorer, manifest, speed = load_scorer(settings) if scorer is None else (scorer, fake, None)
    store = await open_store(settings.job_store)
    lane = InferenceLane(scorer)
    lane.start()
    paths: dict[str, LabPath] = {}
    held: HeldMemory | None = None
    give_back: GiveBack | None = None
    lesson: LessonFeed | None = None
    try:
        lesson = await open_feed(settings)
        if settings.warmup:
            await lane.run([warmup_text(settings)])
            await calibrate_length(scorer, lane.clock, settings)
        if speed is not None:
            speed.start(cost_relative_to(lane.clock.length, len(warmup_text(settings))))
        guard = await open_memory_guard(settings, scorer, warmup_text(settings))
        cache = ResultCache(settings.cache_size, settings.cache_ttl_s)
        pipeline = Pipeline(cache)
        if settings.memory_trim:  # once a crowd is over, on any path: what it grew goes back to the kernel

            def busy() -> bool:
                beside = any(p.inferring for p in paths.values() if isinstance(p, InfersBeside))
                return pipeline.running > 0 or lane.busy or lane.pending_reviews > 0 or beside

            give_back = GiveBack(malloc_trim, busy)
            pipeline.on_leave = give_back.ended
        parts = Parts(settings, scorer, lane, pipeline, store, guard, open_webhooks(settings, store, manifest))
        for spec in specs:
            paths[spec.name] = build_path(spec, parts)
        for owner in paths.values():
            if isinstance(owner, Starts):
                owner.start()
        knobs = knob_board(settings, tuple(paths.values()), settings.knobs_file, speed, guard)
        if lesson is not None:
            record_ends(lesson, knobs, paths.values())
        if settings.memory_trim:  # the heap start-up freed: the box's rest was measured without it
            malloc_trim()
        # Held from here on, once start-up's own peak (model, warm-up) and the heap it freed are gone: an
        # incarnation starts in no more than its rest (docs/box.md, "The stand-in, apart").
        held = HeldMemory(settings.box_state.stand_in_bytes if settings.box_state else 0)  # the seed's libraries
        if settings.box_state is None:  # inside the box, the supervisor prints the page's whole address
            log.warning("Instructor page: /instructor?token=%s (the knobs; keep the token from students)", knobs.token)
        yield Lab(
            settings=settings,
            manifest=manifest,
            lane=lane,
            cache=cache,
            pipeline=pipeline,
            store=store,
            paths=paths,
            knobs=knobs,
            speed=speed,
            stand_in_bytes=held.size,
            lesson=lesson,
        )
    finally:  # in reverse order of starting
        if give_back is not None:
            give_back.close()
        for owner in reversed(paths.values()):
            if isinstance(owner, Stops):
                await owner.stop()
        if speed is not None:
            speed.stop()
        lane.stop()
        await store.close()
        if lesson is not None:
            await lesson.stop()
        if held is not None:
            held.close()
