"""A real lane over a gated fake scorer: the strategies' tests decide when each inference ends."""

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest

from app.engine.clock import ServiceClock
from app.engine.lane import InferenceLane
from tests.fakes import GatedScorer


class SteadyClock(ServiceClock):
    """A service time that stays what the test says (a gated review takes as long as the test likes)."""

    def observe(self, seconds: float, reviews: int, chars: int | None = None) -> None:
        self.samples += 1


@pytest.fixture
async def scorer() -> AsyncIterator[GatedScorer]:
    yield GatedScorer()


@asynccontextmanager
async def running(lane: InferenceLane, scorer: GatedScorer) -> AsyncIterator[InferenceLane]:
    lane.start()
    yield lane
    scorer.open()
    await asyncio.to_thread(lane.stop)


@pytest.fixture
async def lane(scorer: GatedScorer) -> AsyncIterator[InferenceLane]:
    async with running(InferenceLane(scorer), scorer) as started:
        yield started


@pytest.fixture
async def steady_lane(scorer: GatedScorer) -> AsyncIterator[InferenceLane]:
    """A lane whose hints count 1 s per review whatever the gated scorer takes: forecasts a test can compute."""
    async with running(InferenceLane(scorer, clock=SteadyClock(initial_s=1.0)), scorer) as started:
        yield started
