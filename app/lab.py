"""Builds the lab's long-lived parts in order and tears them down in reverse."""

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from app.box.calibrate import slow_to_target
from app.box.speed import SpeedLoop, cost_relative_to
from app.box.state import BoxState
from app.cache import CacheSnapshot, ResultCache
from app.give_back import malloc_trim
from app.jobs.factory import open_store
from app.jobs.store import JobStore
from app.jobs.webhooks import WebhookDispatcher, open_webhooks
from app.lane import InferenceLane, LaneSnapshot, ServiceClock
from app.memory_guard import MemoryGuard, measure_cost
from app.model import RerankerModel, Scorer, load_topics
from app.paths import Pipeline, PipelineSnapshot
from app.registry import LabPath, Load, PathSpec
from app.settings import Settings
from app.strategies.batch import BatcherSnapshot
from app.strategies.batched import MicroBatcher
from app.strategies.limited import SeatGate
from app.strategies.naive import NaiveRunner
from app.strategies.ticket_config import ticket_configs
from app.strategies.ticket_follow import TicketFollower
from app.strategies.ticket_state import LocalRun, Signals
from app.strategies.ticket_worker import TicketWorker
from app.strategies.tickets import TicketService

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
    worker: TicketWorker
    follower: TicketFollower
    store: JobStore
    paths: tuple[LabPath, ...]  # display order, from lab_paths(); the typed fields above are for their routes
    speed: SpeedLoop | None = None  # the box's speed loop; None outside the box
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
        )


def lab_paths(
    naive: NaiveRunner, limited: SeatGate, batched: MicroBatcher, tickets: TicketService
) -> tuple[LabPath, ...]:
    """The lab's paths in display order (app/registry.py's order; a test holds the two together)."""
    return (naive, limited, batched, tickets)


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


def load_scorer(settings: Settings) -> tuple[Scorer, dict[str, Any], SpeedLoop | None]:
    model_dir = settings.resolved_model_dir()
    model = RerankerModel(
        model_dir,
        load_topics(settings.topics_file),
        intra_op_threads=settings.intra_op_threads,
        max_tokens=settings.max_tokens,
        chunk_pairs=settings.pair_chunk,
        memory=settings.memory_arena,
    )
    manifest = dict(model.manifest)
    scorer: Scorer = model
    speed: SpeedLoop | None = None
    if settings.box_slow and settings.box_seconds_per_review > 0:
        state = settings.box_state or BoxState()
        target, text = settings.box_seconds_per_review, warmup_text(settings)
        scorer, calibration, speed = slow_to_target(model, text, target, state.cpu_quota_dir, state.speed_file)
        manifest["box_calibration"] = calibration.as_dict()
    if manifest.get("weights") != "real":
        log.warning(
            "Serving %s with RANDOM weights: the load is real, the topic scores are meaningless. "
            "See docs/model.md, 'Real weights'.",
            model_dir,
        )
    return scorer, manifest, speed


def samples_by_length(settings: Settings) -> list[str]:
    samples = json.loads(settings.samples_file.read_text(encoding="utf-8"))
    return sorted((str(s["text"]) for s in samples), key=len)


def warmup_text(settings: Settings) -> str:
    """A sample review of median length: the service clock starts from what a typical review costs.

    Cost grows with length; warming up on the shortest sample made the first ETAs and
    Retry-After hints about half of the truth (measured in docs/bench/overload.md).
    """
    samples = samples_by_length(settings)
    return samples[len(samples) // 2]


async def calibrate_length(scorer: Scorer, clock: ServiceClock, settings: Settings) -> None:
    """Seed the length fit with the shortest, longest, median and lower-quartile samples, so the
    first ETAs already know long from short. Timed straight on the scorer (nothing else runs yet),
    so the per-review average keeps starting from the median review alone."""
    samples = samples_by_length(settings)
    for text in (samples[0], samples[-1], samples[len(samples) // 2], samples[len(samples) // 4]):
        started = time.perf_counter()
        await asyncio.to_thread(scorer.score, [text])
        clock.length.observe(time.perf_counter() - started, 1, len(text))


async def open_memory_guard(settings: Settings, scorer: Scorer) -> MemoryGuard | None:
    """Measure one inference's memory now, before a crowd can, if the naive guard is on."""
    if not settings.naive_memory_guard or settings.memory_cap_bytes <= 0:
        return None
    cost = await asyncio.to_thread(measure_cost, scorer, warmup_text(settings))
    log.warning(
        "Naive memory guard on: cap %.0f MiB; a 200-character review measured at %.0f MiB.",
        settings.memory_cap_bytes / 2**20,
        cost.bytes_for("x" * 200) / 2**20,
    )
    return MemoryGuard(settings.memory_cap_bytes, cost)


@asynccontextmanager
async def open_lab(settings: Settings, scorer: Scorer | None = None) -> AsyncIterator[Lab]:
    """Model, lane (warmed up, so the service clock starts from a measurement), then paths."""
    fake = {"name": type(scorer).__name__, "weights": "fake"}
    scorer, manifest, speed = load_scorer(settings) if scorer is None else (scorer, fake, None)
    store = await open_store(settings.job_store)
    lane = InferenceLane(scorer)
    lane.start()
    tickets: Tickets | None = None
    batcher: MicroBatcher | None = None
    try:
        if settings.warmup:
            await lane.run([warmup_text(settings)])
            await calibrate_length(scorer, lane.clock, settings)
        if speed is not None:
            speed.start(cost_relative_to(lane.clock.length, len(warmup_text(settings))))
        guard = await open_memory_guard(settings, scorer)
        cache = ResultCache(settings.cache_size, settings.cache_ttl_s)
        pipeline = Pipeline(cache)
        tickets = build_tickets(settings, store, lane, pipeline, open_webhooks(settings, store, manifest))
        tickets.worker.start()
        naive = NaiveRunner(scorer, guard, malloc_trim if settings.memory_trim else None)
        limited = SeatGate(lane, seats=settings.limited_seats, max_wait_s=settings.limited_max_wait_s)
        batcher = MicroBatcher(
            lane, window_s=settings.batch_window_s, max_size=settings.batch_max, max_wait_s=settings.batch_max_wait_s
        )
        batcher.start()
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
            worker=tickets.worker,
            follower=tickets.follower,
            store=store,
            paths=lab_paths(naive, limited, batcher, tickets.service),
            speed=speed,
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
