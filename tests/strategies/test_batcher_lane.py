"""Path 3's batcher against a real lane and a gated fake model: batches form when the lane can take them."""

import asyncio
import threading
from collections.abc import AsyncIterator, Callable
from concurrent.futures import Future
from typing import Any

import pytest

from app.engine.lane import InferenceLane, LaneResult
from app.engine.model import Ranking
from app.errors import InferenceFailed
from app.paths.batched import MicroBatcher
from app.paths.pipeline import Outcome
from tests.fakes import GatedScorer, StreamingScorer
from tests.waiting import eventually

HOUR = 3600.0  # a window no test waits out: whatever goes, went for another reason


def closed(batcher: MicroBatcher, reason: str) -> int:
    return batcher.snapshot().closed[reason]


Batchers = Callable[..., MicroBatcher]


@pytest.fixture
async def batchers() -> AsyncIterator[Batchers]:
    """`batchers(lane, window_s=…, max_size=…)`: a started batcher, stopped after the test (before its lane)."""
    made: list[MicroBatcher] = []

    def make(lane: InferenceLane, **config: Any) -> MicroBatcher:
        batcher = MicroBatcher(lane, **config)
        batcher.start()
        made.append(batcher)
        return batcher

    yield make
    for batcher in reversed(made):
        await batcher.stop()


async def hold_lane(lane: InferenceLane, scorer: GatedScorer) -> "asyncio.Future[object]":
    """Another path's job, running on the lane until the test releases the scorer once."""
    job: asyncio.Future[object] = asyncio.ensure_future(lane.run(["다른 경로의 리뷰"]))
    await asyncio.to_thread(scorer.wait_entered)
    return job


async def holding(batcher: MicroBatcher, n: int) -> None:
    async def check() -> bool:
        return batcher.gathering == n

    await eventually(check)


async def test_lane_busy_five_arrivals_ride_one_batch_when_it_frees(
    lane: InferenceLane, scorer: GatedScorer, batchers: Batchers
) -> None:
    batcher = batchers(lane, window_s=HOUR, max_size=8)
    blocker = await hold_lane(lane, scorer)
    before = closed(batcher, "lane_free")
    texts = [f"리뷰 {i}" for i in range(5)]
    tasks = [asyncio.create_task(batcher.run(t)) for t in texts]
    await holding(batcher, 5)
    assert len(scorer.calls) == 1  # nothing of ours reached the model while the lane was busy

    scorer.release()  # the other path's job ends: the lane frees
    await blocker
    await asyncio.to_thread(scorer.wait_entered)
    assert scorer.calls[1] == texts
    scorer.release()
    results = await asyncio.gather(*tasks)
    assert [r.batch_size for r in results] == [5] * 5
    assert [r.ranking[0].id for r in results] == [f"echo:{t}" for t in texts]
    assert closed(batcher, "lane_free") == before + 1


async def test_idle_lane_holds_a_lone_request_for_the_window(
    lane: InferenceLane, scorer: GatedScorer, batchers: Batchers
) -> None:
    batcher = batchers(lane, window_s=HOUR, max_size=8)
    lone = asyncio.create_task(batcher.run("혼자 온 리뷰"))
    await holding(batcher, 1)
    for _ in range(100):  # many turns of the loop: only the (hour-long) window could send it
        await asyncio.sleep(0)
    assert scorer.calls == []
    assert batcher.gathering == 1
    lone.cancel()


async def test_idle_lane_sends_a_lone_request_when_the_window_ends(
    lane: InferenceLane, scorer: GatedScorer, batchers: Batchers
) -> None:
    scorer.open()
    batcher = batchers(lane, window_s=0.001, max_size=8)
    before = {reason: closed(batcher, reason) for reason in ("timer", "full", "lane_free")}
    result = await batcher.run("혼자 온 리뷰")
    assert result.batch_size == 1
    assert scorer.calls == [["혼자 온 리뷰"]]
    assert closed(batcher, "timer") == before["timer"] + 1
    assert closed(batcher, "full") == before["full"] and closed(batcher, "lane_free") == before["lane_free"]


async def test_a_batch_never_exceeds_eight_and_full_ones_wait_their_turn(
    lane: InferenceLane, scorer: GatedScorer, batchers: Batchers
) -> None:
    batcher = batchers(lane, window_s=HOUR, max_size=8)
    await hold_lane(lane, scorer)
    before_full, before_free = closed(batcher, "full"), closed(batcher, "lane_free")
    texts = [f"리뷰 {i}" for i in range(20)]
    tasks = [asyncio.create_task(batcher.run(t)) for t in texts]
    await holding(batcher, 20)
    scorer.open()
    results = await asyncio.gather(*tasks)
    assert [len(call) for call in scorer.calls[1:]] == [8, 8, 4]
    assert [t for call in scorer.calls[1:] for t in call] == texts  # first come, first batched
    assert sorted(r.batch_size or 0 for r in results) == [4] * 4 + [8] * 16
    assert closed(batcher, "full") == before_full + 2
    assert closed(batcher, "lane_free") == before_free + 1


async def test_a_request_whose_client_left_is_not_in_the_batch(
    lane: InferenceLane, scorer: GatedScorer, batchers: Batchers
) -> None:
    batcher = batchers(lane, window_s=HOUR, max_size=8)
    await hold_lane(lane, scorer)
    tasks = {t: asyncio.create_task(batcher.run(t)) for t in ("남은 리뷰 1", "떠난 리뷰", "남은 리뷰 2")}
    await holding(batcher, 3)
    tasks["떠난 리뷰"].cancel()  # what the route does when the client disconnects
    scorer.open()
    kept = await asyncio.gather(tasks["남은 리뷰 1"], tasks["남은 리뷰 2"])
    assert scorer.calls[1] == ["남은 리뷰 1", "남은 리뷰 2"]
    assert [r.batch_size for r in kept] == [2, 2]
    assert batcher.skipped_gone == 1


async def test_one_bad_text_fails_only_its_own_request(batchers: Batchers) -> None:
    scorer = GatedScorer(fail_on="독이 든 리뷰")
    poisoned = InferenceLane(scorer)
    poisoned.start()
    try:
        batcher = batchers(poisoned, window_s=HOUR, max_size=8)
        await hold_lane(poisoned, scorer)
        texts = ["평범한 리뷰 1", "독이 든 리뷰", "평범한 리뷰 2"]
        tasks = [asyncio.create_task(batcher.run(t)) for t in texts]
        await holding(batcher, 3)
        scorer.open()
        outcomes = await asyncio.gather(*tasks, return_exceptions=True)
    finally:
        scorer.open()
        await asyncio.to_thread(poisoned.stop)
    good = [o for o in outcomes if isinstance(o, Outcome)]
    assert [r.ranking[0].id for r in good] == ["echo:평범한 리뷰 1", "echo:평범한 리뷰 2"]
    assert isinstance(outcomes[1], InferenceFailed)
    assert scorer.calls[1:] == [texts, ["평범한 리뷰 1"], ["독이 든 리뷰"], ["평범한 리뷰 2"]]
    assert batcher.in_flight == 0 and batcher.waiting == 0


async def test_stop_answers_whoever_is_queued_and_gives_the_lane_back(lane: InferenceLane, scorer: GatedScorer) -> None:
    batcher = MicroBatcher(lane, window_s=HOUR, max_size=8)
    batcher.start()
    blocker = await hold_lane(lane, scorer)
    queued = asyncio.create_task(batcher.run("남은 리뷰"))
    await holding(batcher, 1)  # its turn waits on the lane behind the other path's job
    await batcher.stop()
    with pytest.raises(InferenceFailed):
        await queued
    scorer.open()
    await blocker
    after = await lane.run(["다음 리뷰"])  # the lane skipped the withdrawn turn and went on
    assert after.ranking(0)[0].id == "echo:다음 리뷰"
    assert scorer.calls == [["다른 경로의 리뷰"], ["다음 리뷰"]]


class SlowStartLane(InferenceLane):
    """A real lane whose thread, handed a batch, waits for the test before it starts it (and marks itself busy)."""

    def __init__(self, scorer: GatedScorer) -> None:
        super().__init__(scorer)
        self.may_start = threading.Event()

    def _infer(self, job: Any) -> None:
        if not self.may_start.wait(timeout=30):
            raise TimeoutError("test never let the lane start")
        super()._infer(job)


async def test_a_request_that_came_while_our_batch_was_handed_over_waited_for_the_lane(batchers: Batchers) -> None:
    scorer = GatedScorer()
    slow = SlowStartLane(scorer)
    slow.start()
    try:
        batcher = batchers(slow, window_s=HOUR, max_size=2)
        first = [asyncio.create_task(batcher.run(f"먼저 온 리뷰 {i}")) for i in range(2)]

        async def handed_over() -> bool:
            return batcher.in_flight == 2

        await eventually(handed_over)  # the batch is filled; the lane thread has not started it yet
        # Had the late one opened a window, it would end before our batch does (as 0.5 s ends inside a 1.2 s batch).
        batcher.retune(window_s=0.0)
        late = asyncio.create_task(batcher.run("늦게 온 리뷰"))
        await holding(batcher, 1)
        slow.may_start.set()
        scorer.open()
        await asyncio.gather(*first)
        assert (await late).batch_size == 1
    finally:
        slow.may_start.set()
        scorer.open()
        await asyncio.to_thread(slow.stop)
    assert scorer.calls == [["먼저 온 리뷰 0", "먼저 온 리뷰 1"], ["늦게 온 리뷰"]]
    assert batcher.snapshot().closed == {"full": 1, "timer": 0, "lane_free": 1}


async def test_the_lane_is_idle_again_when_a_result_is_out(lane: InferenceLane, scorer: GatedScorer) -> None:
    seen: list[bool] = []
    job = lane.submit(["리뷰"])
    job.add_done_callback(lambda _: seen.append(lane.busy))  # runs on the lane thread, as the result is set
    scorer.release()
    await asyncio.wrap_future(job)
    assert seen == [False]


def turn_on(lane: InferenceLane) -> "Future[bool]":
    """A turn that hands the lane nothing; it resolves with what the lane said when it got there (waited or not)."""
    reached: Future[bool] = Future()

    class Reached:
        def take(self, waited: bool) -> list[str] | None:
            reached.set_result(waited)
            return None

        def wanted(self, i: int) -> bool:
            return True

        def scored(self, i: int, ranking: Ranking, started: float, finished: float) -> None:
            pass

        def done(self, result: LaneResult | Exception) -> None:
            pass

    lane.turn(Reached())
    return reached


async def test_a_turn_says_whether_the_lane_ran_other_work_before_reaching_it(
    lane: InferenceLane, scorer: GatedScorer
) -> None:
    first = turn_on(lane)  # the lane is idle: reached at once
    assert await asyncio.wrap_future(first) is False

    blocker = await hold_lane(lane, scorer)  # another path's job is running
    behind_running = turn_on(lane)
    gone = lane.submit(["떠난 손님"])  # queued ahead of the next turn, withdrawn before it starts
    gone.cancel()
    scorer.release()
    await blocker
    assert await asyncio.wrap_future(behind_running) is True
    behind_skipped = turn_on(lane)
    assert await asyncio.wrap_future(behind_skipped) is False  # the withdrawn job never ran
    assert scorer.calls == [["다른 경로의 리뷰"]]


async def batch_of(
    lane: InferenceLane, scorer: StreamingScorer, batcher: MicroBatcher, texts: list[str]
) -> list["asyncio.Task[Outcome]"]:
    """`texts` gathered into one batch behind another path's job, which then ends: the batch is on the model."""
    blocker = await hold_lane(lane, scorer)
    tasks = [asyncio.create_task(batcher.run(t)) for t in texts]
    await holding(batcher, len(texts))
    scorer.release()  # the other path's review
    await blocker
    await asyncio.to_thread(scorer.wait_entered)
    return tasks


Streaming = tuple[StreamingScorer, InferenceLane]


@pytest.fixture
async def streaming() -> AsyncIterator[Streaming]:
    """A real lane over a model that answers review by review, as the real one does."""
    scorer = StreamingScorer()
    lane = InferenceLane(scorer)
    lane.start()
    yield scorer, lane
    scorer.open()
    await asyncio.to_thread(lane.stop)


async def test_a_member_is_answered_as_soon_as_it_is_scored(batchers: Batchers, streaming: Streaming) -> None:
    scorer, lane = streaming
    batcher = batchers(lane, window_s=HOUR, max_size=8)
    tasks = await batch_of(lane, scorer, batcher, ["첫째", "둘째", "셋째"])
    scorer.release()  # only the first member's pairs are scored
    first = await tasks[0]
    assert first.ranking[0].id == "echo:첫째" and first.batch_size == 3
    assert not tasks[1].done() and not tasks[2].done()
    assert batcher.in_flight == 2
    scorer.release(2)
    rest = await asyncio.gather(*tasks[1:])
    assert [r.ranking[0].id for r in rest] == ["echo:둘째", "echo:셋째"]
    assert batcher.in_flight == 0
    assert len({r.batch_id for r in [first, *rest]}) == 1  # X-Batch-Id: the three rode one batch


async def test_the_last_member_is_answered_once_the_lane_is_idle(batchers: Batchers) -> None:
    """So a client that sends again at once finds the lane free, as after any whole job; answered while the lane
    is still finishing, its next request would read as having waited for the lane (the Grafana test's `timer`)."""
    scorer = StreamingScorer(tail=True)
    lane = InferenceLane(scorer)
    lane.start()
    try:
        batcher = batchers(lane, window_s=HOUR, max_size=8)
        tasks = await batch_of(lane, scorer, batcher, ["첫째", "마지막"])
        busy_at_answer: list[bool] = []
        tasks[1].add_done_callback(lambda _: busy_at_answer.append(lane.busy))
        scorer.release(2)  # both reviews scored; the call has not returned
        await tasks[0]
        assert not tasks[1].done()
        scorer.release()  # the call returns: the lane goes idle, then the last member is answered
        await tasks[1]
        assert busy_at_answer == [False]
    finally:
        scorer.open()
        await asyncio.to_thread(lane.stop)


async def test_a_member_whose_client_left_costs_the_model_nothing_more(
    batchers: Batchers, streaming: Streaming
) -> None:
    scorer, lane = streaming
    batcher = batchers(lane, window_s=HOUR, max_size=8)
    tasks = await batch_of(lane, scorer, batcher, ["남는 손님", "떠난 손님", "끝까지 기다린 손님"])
    tasks[1].cancel()  # its client hung up while the batch runs
    scorer.release(3)
    kept = await asyncio.gather(tasks[0], tasks[2])
    assert [r.ranking[0].id for r in kept] == ["echo:남는 손님", "echo:끝까지 기다린 손님"]
    assert scorer.left_out == ["떠난 손님"]
    assert lane.completed == 2  # the blocker and the batch; the batch's time is not a clean sample


async def test_a_job_abandoned_while_it_runs_stops_at_the_next_model_call(streaming: Streaming) -> None:
    """② and ④ too: cancelling `lane.run` once its inference has begun leaves the rest of it out."""
    scorer, lane = streaming
    job = asyncio.create_task(lane.run(["떠난 손님의 리뷰", "같은 요청의 둘째 리뷰"]))
    await asyncio.to_thread(scorer.wait_entered)  # begun: withdrawing it from the FIFO is too late
    job.cancel()
    with pytest.raises(asyncio.CancelledError):
        await job
    scorer.release(2)
    nxt = lane.submit(["다음 손님"])
    scorer.release()
    after = await asyncio.wrap_future(nxt)
    assert after.ranking(0)[0].id == "echo:다음 손님"
    assert scorer.left_out == ["떠난 손님의 리뷰", "같은 요청의 둘째 리뷰"]
    assert (lane.skipped_gone, lane.completed) == (1, 1)
