"""Path 2's held seats at the gate: a refusal keeps a seat for its client, and only that client gets it."""

import asyncio

import pytest

from app.engine.lane import InferenceLane
from app.errors import BoxFull
from app.paths.holds import SeatHolds
from app.paths.limited import SeatGate, Visit
from app.paths.pipeline import Outcome
from tests.fakes import GatedScorer
from tests.strategies.test_holds import Clock
from tests.waiting import eventually

HOUR = 3600.0


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def gate(steady_lane: InferenceLane, clock: Clock) -> SeatGate:
    """1 in flight + 1 seat, 1 s per review; holds kept 3 s past their Retry-After, on a clock the test moves."""
    holds = SeatHolds(grace_s=3.0, horizon_reviews=10_000, clock=clock)
    return SeatGate(steady_lane, seats=1, max_wait_s=HOUR, holds=holds)


async def fill(gate: SeatGate, scorer: GatedScorer) -> list["asyncio.Task[Outcome]"]:
    """One in flight (held in the model by the gated scorer) and one seated: the gate is full."""
    first = asyncio.create_task(gate.run("첫 손님"))
    await asyncio.to_thread(scorer.wait_entered)
    second = asyncio.create_task(gate.run("둘째 손님"))

    async def full() -> bool:
        return gate.admitted == 2

    await eventually(full)
    return [first, second]


async def refused(gate: SeatGate, text: str, token: str | None = None) -> BoxFull:
    visit = gate.visit(token)
    with pytest.raises(BoxFull) as caught:
        await gate.run(text, visit)
    return caught.value


async def test_a_refusal_carries_a_token_in_header_and_body(gate: SeatGate, scorer: GatedScorer) -> None:
    seated = await fill(gate, scorer)
    first = await refused(gate, "셋째")
    second = await refused(gate, "넷째")
    assert first.headers["Seat-Hold"] == first.extra["hold_token"]
    assert first.extra["hold_grace_s"] == 3.0
    assert first.headers["Seat-Hold"] != second.headers["Seat-Hold"]
    # The second's held seat frees one service time after the first's: its hint is later.
    assert first.retry_after_s is not None and second.retry_after_s is not None
    assert second.retry_after_s > first.retry_after_s
    assert gate.holds.snapshot().live == 2
    scorer.open()
    await asyncio.gather(*seated)


async def test_a_returner_on_time_is_seated_even_when_walk_ins_came_first(
    gate: SeatGate, scorer: GatedScorer, clock: Clock
) -> None:
    first, second = await fill(gate, scorer)
    clock.now += 10  # ② has been busy a while: no crowd that found it empty, so a promise is kept to the letter
    hint = await refused(gate, "돌아올 손님")
    token = hint.headers["Seat-Hold"]
    assert hint.retry_after_s is not None
    clock.now += hint.retry_after_s - 0.1  # the returner is due in 0.1 s; the lane still runs the second's review
    scorer.release(1)
    await first  # a seat is physically free now, but its returner is due before the second leaves

    walk_in = await refused(gate, "먼저 온 손님")
    assert gate.admitted == 1
    assert "Seat-Hold-Result" not in walk_in.headers
    clock.now += 0.1  # on time
    visit = gate.visit(token)
    returner = asyncio.create_task(gate.run("돌아올 손님", visit))

    async def seated() -> bool:
        return gate.admitted == 2

    await eventually(seated)
    assert visit.result == "seated"
    scorer.open()
    assert (await returner).ranking[0].id == "echo:돌아올 손님"
    await second
    assert gate.holds.snapshot().results["seated"] == 1


async def test_an_early_returner_waits_in_the_lobby_for_its_seat(gate: SeatGate, scorer: GatedScorer) -> None:
    first, second = await fill(gate, scorer)
    token = (await refused(gate, "성급한 손님")).headers["Seat-Hold"]
    visit = gate.visit(token)
    returner = asyncio.create_task(gate.run("성급한 손님", visit))
    await asyncio.sleep(0)  # let it reach the lobby
    assert not returner.done() and gate.admitted == 2
    scorer.release(1)  # the one in flight finishes: its seat is the returner's
    await first

    async def seated() -> bool:
        return visit.result == "seated"

    await eventually(seated)
    scorer.open()
    await asyncio.gather(returner, second)


async def test_forged_expired_and_reused_tokens_get_no_seat(gate: SeatGate, scorer: GatedScorer, clock: Clock) -> None:
    first, second = await fill(gate, scorer)
    clock.now += 10  # ② has been busy a while: no crowd that found it empty, so a promise is kept to the letter
    hint = await refused(gate, "진짜 손님")
    late = await refused(gate, "늦은 손님")  # the other seat that frees: held for one who will come too late
    token = hint.headers["Seat-Hold"]
    hold_id, _, mac = token.partition(".")
    assert hint.retry_after_s is not None and late.retry_after_s is not None
    clock.now += hint.retry_after_s - 0.1  # the real returner is due in 0.1 s
    scorer.release(1)
    await first  # one seat physically free, held for the real returner
    forged = await refused(gate, "위조", f"{hold_id}.{mac[::-1]}")
    assert forged.headers["Seat-Hold-Result"] == "forged"
    assert gate.admitted == 1  # the held seat is still empty, still held

    visit = gate.visit(token)
    returner = asyncio.create_task(gate.run("진짜 손님", visit))

    async def seated() -> bool:
        return visit.result == "seated"

    await eventually(seated)
    reused = await refused(gate, "다시 쓰기", token)
    assert reused.headers["Seat-Hold-Result"] == "used"

    clock.now += late.retry_after_s - hint.retry_after_s + 3.1  # past its grace window: it expired unclaimed
    expired = await refused(gate, "늦은 손님", late.headers["Seat-Hold"])
    assert expired.headers["Seat-Hold-Result"] == "expired"
    snap = gate.holds.snapshot()
    assert snap.results == {"seated": 1, "forged": 1, "expired": 1, "used": 1}
    # Holds: the real and late ones', then the expired try's (still live). The forged try found both seats the
    # admitted free promised, so it was told only when (a hold never rests on another's seat), and the reused
    # try, while that time was ahead, was told a place behind it (a later refusal never takes an earlier one's).
    assert (snap.issued, snap.no_shows, snap.live) == (3, 1, 1)
    scorer.open()
    await asyncio.gather(returner, second)


async def test_a_returner_leaving_the_lobby_gives_its_seat_back(gate: SeatGate, scorer: GatedScorer) -> None:
    seated = await fill(gate, scorer)
    token = (await refused(gate, "떠날 손님")).headers["Seat-Hold"]
    returner = asyncio.create_task(gate.run("떠날 손님", Visit(gate, token)))
    await asyncio.sleep(0)
    returner.cancel()
    with pytest.raises(asyncio.CancelledError):
        await returner
    assert gate.holds.snapshot().live == 0
    scorer.open()
    await asyncio.gather(*seated)


async def test_without_holds_a_refusal_promises_nothing(lane: InferenceLane, scorer: GatedScorer) -> None:
    gate = SeatGate(lane, seats=1, max_wait_s=HOUR)
    seated = await fill(gate, scorer)
    refusal = await refused(gate, "셋째")
    assert "Seat-Hold" not in refusal.headers and "hold_token" not in refusal.extra
    scorer.open()
    await asyncio.gather(*seated)


async def _true(value: bool) -> bool:
    return value
