"""③'s batch reaches the lane without the lane ever waiting on the event loop: a stalled loop idles nothing."""

import asyncio
import threading
from collections.abc import Callable, Coroutine, Iterator
from concurrent.futures import Future
from contextvars import Context
from typing import Any, TypeVar, TypeVarTuple, Unpack

import pytest

from app.engine.lane import InferenceLane, LaneResult
from app.engine.model import Ranking
from app.paths.batched import MicroBatcher
from app.paths.pipeline import Outcome
from tests.fakes import GatedScorer, StreamingScorer
from tests.waiting import eventually

T = TypeVar("T")
Ts = TypeVarTuple("Ts")
GUARD_S = 10.0  # a failure guard: nothing here waits it out when the code is right
HOUR = 3600.0


class HopCountingLoop(asyncio.SelectorEventLoop):
    """Counts the callbacks the lane thread schedules on it: each is one cross-thread hop."""

    hops_from_the_lane = 0

    def call_soon_threadsafe(
        self, callback: Callable[[Unpack[Ts]], object], *args: *Ts, context: Context | None = None
    ) -> asyncio.Handle:
        if threading.current_thread().name == "inference-lane":
            self.hops_from_the_lane += 1
        return super().call_soon_threadsafe(callback, *args, context=context)


class LoopThread:
    """An event loop on its own thread, as the server's is beside the lane, which the test can stall at will."""

    def __init__(self) -> None:
        self.loop = HopCountingLoop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="test-loop", daemon=True)
        self._thread.start()
        self._release = threading.Event()

    def call(self, make: Callable[[], Coroutine[Any, Any, T]]) -> "Future[T]":
        async def run() -> T:
            return await make()

        return asyncio.run_coroutine_threadsafe(run(), self.loop)

    def stall(self) -> None:
        """Block the loop thread on a threading.Event, as a handler doing blocking work would."""
        stalled = threading.Event()

        def block() -> None:
            stalled.set()
            self._release.wait(timeout=GUARD_S * 3)

        self._release.clear()
        self.loop.call_soon_threadsafe(block)
        assert stalled.wait(timeout=GUARD_S)

    def resume(self) -> None:
        self._release.set()

    def close(self) -> None:
        self._release.set()
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=GUARD_S)
        self.loop.close()


@pytest.fixture
def scorer() -> GatedScorer:
    return GatedScorer()


@pytest.fixture
def lane(scorer: GatedScorer) -> Iterator[InferenceLane]:
    lane = InferenceLane(scorer)
    lane.start()
    yield lane
    scorer.open()
    lane.stop()


@pytest.fixture
def looped(lane: InferenceLane) -> Iterator[tuple[LoopThread, MicroBatcher]]:
    """③'s batcher on a loop of its own thread, over the real lane."""
    thread = LoopThread()

    async def make() -> MicroBatcher:
        batcher = MicroBatcher(lane, window_s=HOUR, max_size=8)
        batcher.start()
        return batcher

    batcher = thread.call(make).result(timeout=GUARD_S)
    yield thread, batcher
    thread.resume()
    thread.call(batcher.stop).result(timeout=GUARD_S)
    thread.close()


def until(check: Callable[[], bool], thread: LoopThread) -> None:
    """Wait for `check` (read on the loop) to hold: a failure guard, never a delay."""

    async def holds() -> bool:
        return check()

    thread.call(lambda: eventually(holds, limit_s=GUARD_S)).result(timeout=GUARD_S * 2)


def ask(thread: LoopThread, batcher: MicroBatcher, text: str) -> "Future[Outcome]":
    return thread.call(lambda: batcher.run(text))


def test_a_stalled_loop_does_not_idle_the_lane(
    lane: InferenceLane, scorer: GatedScorer, looped: tuple[LoopThread, MicroBatcher]
) -> None:
    """③'s batch waits in the lane's FIFO behind another path's job, with ② work queued behind it; then the loop
    stalls. The lane runs ③'s batch and the ② work all the same; ③'s clients are answered once the loop is back."""
    thread, batcher = looped
    blocker = lane.submit(["다른 경로의 리뷰"])
    scorer.wait_entered()
    texts = ["셋째 경로 1", "셋째 경로 2", "셋째 경로 3"]
    answers = [ask(thread, batcher, t) for t in texts]
    until(lambda: batcher.gathering == 3, thread)
    thread.stall()
    hops_before = thread.loop.hops_from_the_lane
    behind = lane.submit(["뒤에 줄 선 ② 리뷰"])
    scorer.open()
    assert blocker.result(timeout=GUARD_S).ranking(0)[0].id == "echo:다른 경로의 리뷰"
    assert behind.result(timeout=GUARD_S).ranking(0)[0].id == "echo:뒤에 줄 선 ② 리뷰"
    assert scorer.calls == [["다른 경로의 리뷰"], texts, ["뒤에 줄 선 ② 리뷰"]]
    assert not any(a.done() for a in answers)  # the loop is still stalled: nobody could answer them yet
    # Taken, two members scored, the result: all of it waits for one wake-up of the loop.
    assert thread.loop.hops_from_the_lane - hops_before == 1
    thread.resume()
    outcomes: list[Outcome] = [a.result(timeout=GUARD_S) for a in answers]
    assert [o.ranking[0].id for o in outcomes] == [f"echo:{t}" for t in texts]
    assert {o.batch_size for o in outcomes} == {3}
    assert len({o.batch_id for o in outcomes}) == 1


def test_a_stalled_loop_whose_batch_everyone_left_leaves_the_lane_to_other_work(
    lane: InferenceLane, scorer: GatedScorer, looped: tuple[LoopThread, MicroBatcher]
) -> None:
    """③'s turn comes up empty (its only client left) while the loop is stalled: the lane moves on to ② work."""
    thread, batcher = looped
    blocker = lane.submit(["다른 경로의 리뷰"])
    scorer.wait_entered()
    leaver = ask(thread, batcher, "떠난 손님")
    until(lambda: batcher.gathering == 1, thread)
    leaver.cancel()  # its client hung up
    until(lambda: batcher.gathering == 0, thread)
    thread.stall()
    behind = lane.submit(["뒤에 줄 선 ② 리뷰"])
    scorer.open()
    assert blocker.result(timeout=GUARD_S).ranking(0)[0].id == "echo:다른 경로의 리뷰"
    assert behind.result(timeout=GUARD_S).ranking(0)[0].id == "echo:뒤에 줄 선 ② 리뷰"
    assert scorer.calls == [["다른 경로의 리뷰"], ["뒤에 줄 선 ② 리뷰"]]
    thread.resume()
    until(lambda: batcher.skipped_gone == 1, thread)


async def test_waiting_and_in_flight_say_where_each_member_is_at_every_point() -> None:
    """A member is waiting until the lane takes it and in flight from that instant until it is answered: the
    counts change on the lane thread as it takes the batch, not when the loop next hears of it."""
    scorer = StreamingScorer()
    lane = InferenceLane(scorer)
    lane.start()
    batcher = MicroBatcher(lane, window_s=HOUR, max_size=8)
    batcher.start()
    try:
        blocker = asyncio.ensure_future(lane.run(["다른 경로의 리뷰"]))
        await asyncio.to_thread(scorer.wait_entered)
        tasks = [asyncio.create_task(batcher.run(t)) for t in ("첫째", "둘째", "셋째")]

        async def handed_over() -> bool:
            return batcher.gathering == 3

        await eventually(handed_over)
        assert batcher.in_flight == 0
        scorer.release()  # the other path's review: the lane comes free and takes our batch
        await asyncio.to_thread(scorer.wait_entered)
        assert (batcher.gathering, batcher.in_flight) == (0, 3)
        late = asyncio.create_task(batcher.run("늦게 온 리뷰"))

        async def queued_behind() -> bool:
            return batcher.gathering == 1

        await eventually(queued_behind)
        assert batcher.in_flight == 3
        scorer.release()
        await tasks[0]
        assert (batcher.gathering, batcher.in_flight) == (1, 2)
        scorer.release(2)
        await asyncio.gather(*tasks[1:])
        await blocker
        await asyncio.to_thread(scorer.wait_entered)  # the late one's batch is on the model
        assert (batcher.gathering, batcher.in_flight) == (0, 1)
        scorer.open()
        assert (await late).batch_size == 1
        assert (batcher.gathering, batcher.in_flight) == (0, 0)
    finally:
        await batcher.stop()
        scorer.open()
        await asyncio.to_thread(lane.stop)


class Owner:
    """A turn's owner that hands the lane `texts` and keeps what the lane tells it."""

    def __init__(self, texts: list[str]) -> None:
        self.texts = texts
        self.scored_now: list[int] = []
        self.result: Future[LaneResult | Exception] = Future()

    def take(self, waited: bool) -> list[str] | None:
        return self.texts

    def wanted(self, i: int) -> bool:
        return True

    def scored(self, i: int, ranking: Ranking, started: float, finished: float) -> None:
        self.scored_now.append(i)

    def done(self, result: LaneResult | Exception) -> None:
        self.result.set_result(result)


def test_the_lane_hands_every_scored_review_on_and_keeps_none_back(lane: InferenceLane, scorer: GatedScorer) -> None:
    """Who goes out when is the owner's rule (③'s handover keeps its last member for the result), not the lane's."""
    owner = Owner(["가", "나", "다"])
    lane.turn(owner)
    scorer.release()
    result = owner.result.result(timeout=GUARD_S)
    assert isinstance(result, LaneResult)
    assert [r[0].id for r in result.rankings if r] == ["echo:가", "echo:나", "echo:다"]
    assert owner.scored_now == [0, 1, 2]


def test_an_owner_whose_take_fails_does_not_stop_the_lane(lane: InferenceLane, scorer: GatedScorer) -> None:
    class Failing(Owner):
        def take(self, waited: bool) -> list[str] | None:
            raise RuntimeError("a bug in the owner")

    lane.turn(Failing([]))
    scorer.open()
    assert lane.submit(["다음 리뷰"]).result(timeout=GUARD_S).ranking(0)[0].id == "echo:다음 리뷰"
    assert lane.alive
