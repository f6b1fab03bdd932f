"""Builds the lab's long-lived parts in order and tears them down in reverse."""

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from app.boxed.speed import SpeedLoop, cost_relative_to
from app.boxed.stand_in import HeldMemory
from app.engine.cache import CacheSnapshot, ResultCache
from app.engine.lane import InferenceLane, LaneSnapshot
from app.engine.model import Scorer
from app.engine.scorer import calibrate_length, load_scorer, warmup_text
from app.jobs.factory import open_store
from app.jobs.store import JobStore
from app.jobs.webhooks import WebhookDispatcher, open_webhooks
from app.knobs.board import KnobBoard, KnobsSnapshot
from app.knobs.table import knob_board
from app.lesson.feed import LessonFeed, open_feed
from app.memory.give_back import malloc_trim
from app.memory.guard import open_memory_guard
from app.paths.adaptive import AdaptiveGate
from app.paths.batch import BatcherSnapshot
from app.paths.batched import MicroBatcher
from app.paths.holds import HoldsSnapshot, SeatHolds
from app.paths.limited import SeatGate
from app.paths.naive import NaiveRunner
from app.paths.pipeline import Pipeline, PipelineSnapshot
from app.paths.registry import LabPath, Load, PathSpec
from app.paths.ticket_config import ticket_configs
from app.paths.ticket_follow import TicketFollower
from app.paths.ticket_state import LocalRun, Signals
from app.paths.ticket_worker import TicketWorker
from app.paths.tickets import TicketService
from app.settings import Settings

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class LabSnapshot:
    """Every owner's state at one moment (the store's counts are read apart: they are async)."""

    lane: LaneSnapshot
    paths: tuple[PathSpec, ...]  # display order
    loads: dict[str, Load]  # by path name
    batched: BatcherSnapshot  # ③'s batch sizes and close reasons, for its own metrics
    cache: CacheSnapshot
    pipeline: PipelineSnapshot
    holds: HoldsSnapshot  # ②'s held seats, for their own metrics
    knobs: KnobsSnapshot


@dataclass(frozen=True, slots=True)
class Tickets:
    """Path 4's three roles, sharing one store, one change signal and this box's running job."""

    service: TicketService
    worker: TicketWorker
    follower: TicketFollower


@dataclass(slots=True)
class Lab:
    settings: Settings
    manifest: dict[str, Any]
    lane: InferenceLane
    cache: ResultCache
    pipeline: Pipeline
    naive: NaiveRunner
    limited: SeatGate
    batcher: MicroBatcher
    tickets: TicketService
    adaptive: AdaptiveGate
    worker: TicketWorker
    follower: TicketFollower
    store: JobStore
    paths: tuple[LabPath, ...]  # display order, from lab_paths(); the typed fields above are for their routes
    knobs: KnobBoard
    speed: SpeedLoop | None = None  # the box's speed loop; None outside the box
    lesson: LessonFeed | None = None  # the class view's record of every path request (LAB_LESSON_RECORD)
    draining: asyncio.Event = field(default_factory=asyncio.Event)  # set once, by drain()

    def drain(self) -> None:
        """SIGTERM (app/serve.py): claim no more tickets and end every event stream now, so the
        server's wait for open connections is only for answers already due (seated ②, batches)."""
        self.draining.set()
        self.worker.drain()

    def speed_now(self) -> dict[str, Any] | None:
        """The box's speed loop's one live value (None outside the box)."""
        return None if self.speed is None else self.speed.snapshot()

    @property
    def healthy(self) -> bool:
        return self.lane.alive and self.worker.alive and self.batcher.alive

    @property
    def routes(self) -> dict[str, str]:
        """Submitting route → path name, for LabMiddleware's count of answers."""
        return {p.spec.route: p.spec.name for p in self.paths}

    def snapshot(self) -> LabSnapshot:
        return LabSnapshot(
            lane=self.lane.snapshot(),
            paths=tuple(p.spec for p in self.paths),
            loads={p.spec.name: p.load() for p in self.paths},
            batched=self.batcher.snapshot(),
            cache=self.cache.snapshot(),
            pipeline=self.pipeline.snapshot(),
            holds=self.limited.holds.snapshot(),
            knobs=self.knobs.snapshot(),
        )


def lab_paths(
    naive: NaiveRunner, limited: SeatGate, batched: MicroBatcher, tickets: TicketService, adaptive: AdaptiveGate
) -> tuple[LabPath, ...]:
    """The lab's paths in display order (app/paths/registry.py's order; a test holds the two together)."""
    return (naive, limited, batched, tickets, adaptive)


def build_tickets(
    settings: Settings,
    store: JobStore,
    lane: InferenceLane,
    pipeline: Pipeline,
    webhooks: WebhookDispatcher | None = None,
) -> Tickets:
    """The one place Settings become the ticket roles' small configs."""
    service_cfg, worker_cfg, follow_cfg = ticket_configs(settings)
    signals, local = Signals(store, follow_cfg.poll_s), LocalRun()
    lane.room.on_change(signals.watch.notify)  # ② and ③ move tickets' ETAs: followers look again
    service = TicketService(store, lane.room, pipeline, service_cfg, signals, local)
    worker = TicketWorker(store, lane, pipeline, worker_cfg, signals, local, webhooks)
    return Tickets(service, worker, TicketFollower(service, signals, follow_cfg))


def record_ends(lesson: LessonFeed, knobs: KnobBoard, worker: TicketWorker) -> None:
    """The lesson's record hears of each knob turn and each ticket this box's worker finished."""
    record = lesson.record
    knobs.on_turn = record.knob_turned
    worker.on_done = lambda job: record.ticket_done(
        job.id, job.finished_at or time.time(), job.waited_ms, job.inference_ms
    )


@asynccontextmanager
async def open_lab(settings: Settings, scorer: Scorer | None = None) -> AsyncIterator[Lab]:
    """Model, lane (warmed up, so the service clock starts from a measurement), then paths."""
    fake = {"name": type(scorer).__name__, "weights": "fake"}
    held = HeldMemory(settings.box_state.stand_in_bytes if settings.box_state else 0)  # for the seed's libraries
    scorer, manifest, speed = load_scorer(settings) if scorer is None else (scorer, fake, None)
    store = await open_store(settings.job_store)
    lane = InferenceLane(scorer)
    lane.start()
    tickets: Tickets | None = None
    batcher: MicroBatcher | None = None
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
        tickets = build_tickets(settings, store, lane, pipeline, open_webhooks(settings, store, manifest))
        tickets.worker.start()
        naive = NaiveRunner(scorer, guard, malloc_trim if settings.memory_trim else None)
        holds = SeatHolds(grace_s=settings.limited_hold_grace_s, horizon_reviews=settings.limited_hold_horizon_reviews)
        limited = SeatGate(lane, seats=settings.limited_seats, max_wait_s=settings.limited_max_wait_s, holds=holds)
        batcher = MicroBatcher(
            lane, window_s=settings.batch_window_s, max_size=settings.batch_max, max_wait_s=settings.batch_max_wait_s
        )
        batcher.start()
        adaptive = AdaptiveGate(
            lane, target_reviews=settings.adaptive_target_reviews, interval_reviews=settings.adaptive_interval_reviews
        )
        paths = lab_paths(naive, limited, batcher, tickets.service, adaptive)
        knobs = knob_board(settings, paths, settings.knobs_file, speed, guard)
        if lesson is not None:
            record_ends(lesson, knobs, tickets.worker)
        if settings.memory_trim:  # the heap start-up freed: the box's rest was measured without it
            malloc_trim()
        log.warning("Instructor page: /instructor?token=%s (the knobs; keep the token from students)", knobs.token)
        yield Lab(
            settings=settings,
            manifest=manifest,
            lane=lane,
            cache=cache,
            pipeline=pipeline,
            naive=naive,
            limited=limited,
            batcher=batcher,
            tickets=tickets.service,
            adaptive=adaptive,
            worker=tickets.worker,
            follower=tickets.follower,
            store=store,
            paths=paths,
            knobs=knobs,
            speed=speed,
            lesson=lesson,
        )
    finally:  # in reverse order of starting
        if batcher is not None:
            await batcher.stop()
        if speed is not None:
            speed.stop()
        if tickets is not None:
            await tickets.worker.stop()
        lane.stop()
        await store.close()
        if lesson is not None:
            await lesson.stop()
        held.close()
