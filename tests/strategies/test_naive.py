"""Path 1: every request infers at once, concurrently with all others; nobody is refused."""

import asyncio
import sys

import pytest

from app.engine.model import CallShape, RerankerModel
from app.memory.give_back import malloc_trim
from app.paths.naive import NaiveRunner
from kit.live import TINY_MODEL
from tests.conftest import LabClientFactory
from tests.fakes import GatedScorer
from tests.test_model_streaming import TOPICS, CountingSession


async def test_naive_runs_requests_concurrently(lab_client: LabClientFactory) -> None:
    scorer = GatedScorer()
    async with lab_client(scorer) as client:
        tasks = [asyncio.create_task(client.post("/api/naive/predict", json={"text": f"리뷰 {i}"})) for i in range(4)]
        # All four are inside the model at the same moment: no lane, no queue.
        await asyncio.to_thread(scorer.wait_entered, 4)
        assert scorer.active == 4
        scorer.release(4)
        responses = await asyncio.gather(*tasks)
    assert [r.status_code for r in responses] == [200] * 4
    assert scorer.max_active == 4


def test_malloc_trim_exists_where_glibc_does() -> None:
    assert malloc_trim() is sys.platform.startswith("linux")


async def test_naive_calls_the_model_as_a_student_server_does_one_call_per_review() -> None:
    """① sends a review's 24 pairs in one model call, whatever call shape the lane was tuned to."""
    m = RerankerModel(TINY_MODEL, TOPICS, call_shape=CallShape.fixed(4))
    counting = CountingSession(m.session)
    m.session = counting
    outcome = await NaiveRunner(m).run("가격 대비 괜찮아요")
    assert counting.rows == [len(TOPICS)]
    assert len(outcome.ranking) == len(TOPICS)


async def test_start_up_gives_the_heap_it_freed_back_once(
    lab_client: LabClientFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fresh incarnation starts at the rest the box was measured at, not ~65 MiB above it (docs/box.md)."""
    trims: list[str] = []

    def trim() -> bool:
        trims.append("trim")
        return True

    monkeypatch.setattr("app.lab.malloc_trim", trim)
    async with lab_client(GatedScorer(gated=False)):
        assert trims == ["trim"]  # after a crowd, on any path, too: tests/test_give_back.py
    async with lab_client(GatedScorer(gated=False), memory_trim=False):
        assert trims == ["trim"]
