"""A real lane over a gated fake scorer: the strategies' tests decide when each inference ends."""

import asyncio
from collections.abc import AsyncIterator

import pytest

from app.lane import InferenceLane
from tests.fakes import GatedScorer


@pytest.fixture
async def scorer() -> AsyncIterator[GatedScorer]:
    yield GatedScorer()


@pytest.fixture
async def lane(scorer: GatedScorer) -> AsyncIterator[InferenceLane]:
    lane = InferenceLane(scorer)
    lane.start()
    yield lane
    scorer.open()
    await asyncio.to_thread(lane.stop)
