"""Path 5: admitted by the answer it can promise, in order while the queue drains, newest first while it stands.

A real lane over a gated scorer whose hints count 1 s per review (`steady_lane`), and a clock the test moves
by hand for the gate's own timing (the lane's backlog does not move with it: moving it brings promises due):
nothing here sleeps.
"""

import asyncio

import pytest

from app.engine.lane import InferenceLane
from app.errors import BoxFull, retry_after_header
from app.paths.adaptive import AdaptiveGate
from app.paths.pipeline import Outcome
from tests.fakes import GatedScorer
from tests.strategies.test_holds import Clock
from tests.waiting import eventually

Tasks = list["asyncio.Task[Outcome]"]


def gate_of(lane: InferenceLane, clock: Clock, *, target: float = 2, interval: float = 4) -> AdaptiveGate:
    """Target 2 reviews: while the queue drains a newcomer is promised a start within 4 reviews, once it stands 2."""
    return AdaptiveGate(lane, target_reviews=target, drain_reviews=2 * target, interval_reviews=interval, now=clock)


async def admit(gate: AdaptiveGate, texts: list[str]) -> Tasks:
    """Each text arrives in turn and is admitted (the test fails if one is refused)."""
    tasks = []
    for text in texts:
        before = gate.load()
        tasks.append(asyncio.create_task(gate.run(text)))

        async def admitted(before_in: int = before.in_flight + before.waiting) -> bool:
            assert not tasks[-1].done() or tasks[-1].exception() is None, tasks[-1].exception()
            now = gate.load()
            return now.in_flight + now.waiting == before_in + 1

        await eventually(admitted)
    return tasks


async def refused(gate: AdaptiveGate, text: str) -> BoxFull:
    """Awaited directly while the scorer is gated: it can only return if the refusal waited for nothing."""
    with pytest.raises(BoxFull) as caught:
        await gate.run(text)
    return caught.value


async def holding(gate: AdaptiveGate, n: int) -> None:
    """Until `n` of ⑤'s requests are admitted (on the lane or in its queue)."""

    async def held() -> bool:
        return gate.load().in_flight + gate.load().waiting == n

    await eventually(held)


async def on_lane(scorer: GatedScorer, n: int) -> None:
    await asyncio.to_thread(scorer.wait_entered, n)


async def test_nothing_is_refused_under_light_load(steady_lane: InferenceLane, scorer: GatedScorer) -> None:
    gate = gate_of(steady_lane, Clock())
    scorer.open()
    for i in range(6):
        assert (await gate.run(f"하나씩 {i}")).ranking[0].id == f"echo:하나씩 {i}"
    await asyncio.gather(*(gate.run(f"조금 겹쳐서 {i}") for i in range(3)))
    assert gate.load().refusals == {"over_target": 0}
    assert not gate.standing


async def test_the_queue_is_served_in_order_while_it_drains(steady_lane: InferenceLane, scorer: GatedScorer) -> None:
    gate = gate_of(steady_lane, Clock())
    tasks = await admit(gate, ["가", "나", "다", "라"])
    await on_lane(scorer, 1)
    scorer.open()
    await asyncio.gather(*tasks)
    assert scorer.calls == [["가"], ["나"], ["다"], ["라"]]
    assert gate.load().details["newest_first"] == 0


async def test_while_draining_a_newcomer_is_refused_at_once_past_twice_the_target(
    steady_lane: InferenceLane, scorer: GatedScorer
) -> None:
    gate = gate_of(steady_lane, Clock(), target=2)
    tasks = await admit(gate, ["가", "나", "다", "라", "마"])  # 1 running, 1 in the lane's FIFO, 3 in ⑤'s queue
    await on_lane(scorer, 1)
    refusal = await refused(gate, "바")  # it would start 5 reviews from now: one past twice the target
    assert refusal.reason == "over_target" and refusal.status == 429
    assert refusal.retry_after_s is not None and retry_after_header(refusal.retry_after_s) == "1"  # one review on
    assert refusal.waited_s is not None and refusal.waited_s < 0.5
    assert gate.load().refusals["over_target"] == 1
    assert gate.standing  # the work ahead outlasts the bound: the queue will stand, no need to wait and see
    scorer.open()
    await asyncio.gather(*tasks)


async def standing_queue(gate: AdaptiveGate, scorer: GatedScorer) -> tuple[Tasks, BoxFull]:
    """A crowd at an idle box: one running, one in the lane's FIFO, three in ⑤'s queue (each promised a start
    within twice the target, the last one just), then a sixth refused: the queue stands."""
    tasks = await admit(gate, ["가", "나", "다", "라", "마"])
    await on_lane(scorer, 1)
    assert not gate.standing
    return tasks, await refused(gate, "바")


async def test_under_a_standing_queue_refusals_are_instant_and_the_newest_go_first(
    steady_lane: InferenceLane, scorer: GatedScorer
) -> None:
    gate = gate_of(steady_lane, Clock())
    tasks, refusal = await standing_queue(gate, scorer)
    assert gate.standing and gate.load().details["standing"] == 1
    assert refusal.reason == "over_target" and refusal.waited_s is not None and refusal.waited_s < 0.5
    scorer.open()
    await asyncio.gather(*tasks)
    assert scorer.calls == [["가"], ["나"], ["마"], ["라"], ["다"]]  # the waiters newest first: each still in time
    assert gate.load().details["newest_first"] == 2
    assert gate.load().details["late"] == 0


async def test_nobody_admitted_is_refused_later_even_when_the_lane_runs_late(
    steady_lane: InferenceLane, scorer: GatedScorer
) -> None:
    clock = Clock()
    gate = gate_of(steady_lane, clock)
    tasks, _ = await standing_queue(gate, scorer)
    clock.now += 30  # every promise is long past: the lane ran far slower than measured
    scorer.open()
    answered = await asyncio.gather(*tasks)
    assert sorted(o.ranking[0].id for o in answered) == ["echo:가", "echo:나", "echo:다", "echo:라", "echo:마"]
    assert gate.load().refusals == {"over_target": 1}
    assert gate.load().details["late"] == 5  # each answered, and each counted as a promise broken


async def test_a_standing_queue_drains_back_to_order_when_a_newcomer_finds_the_box_idle_an_interval_on(
    steady_lane: InferenceLane, scorer: GatedScorer
) -> None:
    clock = Clock()
    gate = gate_of(steady_lane, clock)
    tasks, _ = await standing_queue(gate, scorer)
    scorer.open()
    await asyncio.gather(*tasks)
    clock.now += 1
    await gate.run("잠깐 한가한 때")
    assert gate.standing  # idle, but someone was refused within the interval
    clock.now += 4
    await gate.run("다시 한가한 때")
    assert not gate.standing


async def test_a_client_gone_or_refused_never_costs_another_its_review_or_the_lane(
    steady_lane: InferenceLane, scorer: GatedScorer
) -> None:
    gate = gate_of(steady_lane, Clock())
    tasks = await admit(gate, ["가", "나", "다", "라", "마"])
    await on_lane(scorer, 1)
    tasks[1].cancel()  # let through to the lane, not yet running
    tasks[2].cancel()  # still in ⑤'s queue
    await refused(gate, "넘치는 것")
    scorer.open()
    done = await asyncio.gather(*tasks, return_exceptions=True)
    assert isinstance(done[1], asyncio.CancelledError) and isinstance(done[2], asyncio.CancelledError)
    answered = [o.ranking[0].id for o in (done[0], *done[3:]) if isinstance(o, Outcome)]
    assert answered == ["echo:가", "echo:라", "echo:마"]
    assert ["다"] not in scorer.calls
    assert gate.load().in_flight == gate.load().waiting == 0
    assert steady_lane.alive
    assert (await gate.run("그다음")).ranking[0].id == "echo:그다음"


async def test_a_failing_review_is_a_503_and_frees_its_place(steady_lane: InferenceLane) -> None:
    failing = GatedScorer(gated=False, fail_on="깨진 리뷰")
    lane = InferenceLane(failing, clock=steady_lane.clock)
    lane.start()
    try:
        gate = gate_of(lane, Clock())
        with pytest.raises(Exception) as caught:
            await gate.run("깨진 리뷰")
        assert getattr(caught.value, "status", None) == 503
        assert gate.load().in_flight == 0
        assert (await gate.run("멀쩡한 리뷰")).ranking[0].id == "echo:멀쩡한 리뷰"
    finally:
        await asyncio.to_thread(lane.stop)


async def test_the_instructor_retunes_the_bounds(steady_lane: InferenceLane) -> None:
    gate = gate_of(steady_lane, Clock(), target=1, interval=4)
    gate.retune(target_reviews=3, interval_reviews=8)
    assert (gate.target_s, gate.interval_s) == (3.0, 8.0)
    gate.retune(interval_reviews=2)
    assert gate.interval_s == 3.0  # never shorter than the target


async def test_in_a_crowds_first_moment_one_students_repeats_wait_for_classmates_first_requests(
    steady_lane: InferenceLane, scorer: GatedScorer
) -> None:
    """Five places (a start within 4 reviews): a's five at once would take them all. a's first is judged at once, its
    repeats are held; b's and c's first requests, arriving after, get places; then a's repeats take what is left."""
    gate = gate_of(steady_lane, Clock())
    mine = [asyncio.create_task(gate.visit("a").run(f"a의 리뷰 {i}")) for i in range(5)]
    await holding(gate, 1)
    theirs = [asyncio.create_task(gate.visit(s).run(f"{s}의 리뷰")) for s in ("b", "c")]
    await holding(gate, 3)
    assert not any(t.done() for t in mine)  # a's repeats not judged yet: neither admitted nor refused
    gate.settle()  # the crowd's first moment is over (the gate's timer does this after one target's time)
    await holding(gate, 5)
    refusals = await asyncio.gather(*mine[3:], return_exceptions=True)
    assert all(isinstance(r, BoxFull) and "classmates' first requests" in str(r) for r in refusals)
    scorer.open()
    answered = await asyncio.gather(*mine[:3], *theirs)
    assert [o.ranking[0].id for o in answered[3:]] == ["echo:b의 리뷰", "echo:c의 리뷰"]


async def test_a_students_repeats_go_at_once_when_the_lane_would_otherwise_idle(
    steady_lane: InferenceLane, scorer: GatedScorer
) -> None:
    gate = gate_of(steady_lane, Clock())  # nobody else comes: a's repeats are let go when its first is answered
    tasks = [asyncio.create_task(gate.visit("a").run(f"a의 리뷰 {i}")) for i in range(3)]
    await holding(gate, 1)
    scorer.open()
    assert len(await asyncio.gather(*tasks)) == 3
    assert gate.load().refusals == {"over_target": 0}


async def test_the_other_paths_held_work_is_ahead_of_a_newcomer(
    steady_lane: InferenceLane, scorer: GatedScorer
) -> None:
    """② holds five seated reviews for the lane's next turns: they take turns with ⑤'s, so a fourth ⑤ newcomer
    would start 5 reviews from now (two of ⑤'s and three of ②'s ahead): past the 4 it is promised."""
    steady_lane.room.share("limited", lambda: [1.0] * 5)
    gate = gate_of(steady_lane, Clock())
    tasks = await admit(gate, ["가", "나", "다"])
    await on_lane(scorer, 1)
    await refused(gate, "라")
    scorer.open()
    await asyncio.gather(*tasks)


def test_a_review_longer_than_any_measured_is_never_predicted_under_its_characters(steady_lane: InferenceLane) -> None:
    """A curve fitted on short reviews alone runs under a long one's cost: past the longest measured, the
    characters' prediction is the floor (a review predicted short makes those behind it late)."""
    gate = AdaptiveGate(steady_lane, target_reviews=2, drain_reviews=4, interval_reviews=4, tokens=len, now=Clock())
    for tokens in (10, 20, 30, 40, 10, 20):
        gate.learn(tokens, 0.1 + 0.001 * tokens)  # 0.1 s + 1 ms a token, as measured on short reviews
    by_chars = steady_lane.room.one(400)  # the lane's shared clock: 1 s a review here
    assert gate.cost_s("가" * 40)[1] == pytest.approx(0.14)  # within what was measured: its tokens alone
    assert gate.cost_s("가" * 400)[1] == pytest.approx(by_chars)  # past it: the fit says 0.5 s, the floor 1 s
