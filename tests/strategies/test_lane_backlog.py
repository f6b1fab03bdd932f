"""The lane's backlog counts a submitter's own prediction where it gave one (⑤'s, from tokens) and the clock's
from characters for the rest: a long review predicted from its characters held ⑤'s door shut long after it ended."""

import asyncio

from app.engine.lane import InferenceLane
from tests.fakes import GatedScorer
from tests.waiting import eventually


async def test_a_jobs_own_prediction_is_what_the_backlog_counts(
    steady_lane: InferenceLane, scorer: GatedScorer
) -> None:
    running = asyncio.create_task(steady_lane.run(["긴 리뷰" * 500], expected_s=10.0))
    await asyncio.to_thread(scorer.wait_entered, 1)
    queued = [
        asyncio.create_task(steady_lane.run(["예상 있음"], expected_s=2.5)),
        asyncio.create_task(steady_lane.run(["예상 없음"])),  # the steady clock's 1 s a review
    ]

    async def both_queued() -> bool:
        return steady_lane.pending_reviews == 2

    await eventually(both_queued)
    assert 13.0 < steady_lane.backlog_s() <= 13.5  # the running one's 10 s less what has passed, then 2.5 and 1
    scorer.open()
    await asyncio.gather(running, *queued)
    assert steady_lane.backlog_s() == 0.0 and steady_lane.current_expected_s is None
