"""Memory back after any crowd: the heap is trimmed once a crowd on any path is over, never in the middle of one."""

import asyncio
import functools
from collections.abc import Callable

import pytest

from app.memory.give_back import GiveBack
from tests.conftest import LabClientFactory
from tests.fakes import GatedScorer
from tests.waiting import eventually


class Armed:
    """A pending check, as asyncio's call_later handle: cancellable."""

    def __init__(self, callback: Callable[[], None]) -> None:
        self.callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class ManualSettle:
    """GiveBack's `later`, driven by the test: the settle time passes when `elapse()` says so, not on a clock."""

    def __init__(self) -> None:
        self.armed: list[Armed] = []

    def later(self, _delay_s: float, callback: Callable[[], None]) -> Armed:
        self.armed.append(Armed(callback))
        return self.armed[-1]

    async def elapse(self) -> None:
        await asyncio.sleep(0)  # one turn of the loop: `ended()` arms through call_soon_threadsafe
        armed, self.armed = self.armed, []
        for check in armed:
            if not check.cancelled:
                check.callback()


class Trims:
    def __init__(self) -> None:
        self.count = 0

    def __call__(self) -> bool:
        self.count += 1
        return True


async def test_one_trim_once_the_box_has_been_quiet_for_the_settle_after_the_last_end() -> None:
    settle, trims, busy = ManualSettle(), Trims(), [True]
    give_back = GiveBack(trims, lambda: busy[0], later=settle.later)
    give_back.ended()
    await settle.elapse()
    assert trims.count == 0  # still busy: the crowd's next review is on the lane
    for _ in range(3):
        give_back.ended()
    busy[0] = False
    await settle.elapse()
    assert trims.count == 1  # three ends within the settle: one check, the last one's
    await settle.elapse()
    assert trims.count == 1  # nothing ended since: nothing to give back
    give_back.close()
    give_back.ended()
    await settle.elapse()
    assert trims.count == 1


@pytest.fixture
def watched(monkeypatch: pytest.MonkeyPatch) -> tuple[ManualSettle, Trims]:
    """The lab's give-back with a test-driven settle and a counted trim (start-up's own trim counts too)."""
    settle, trims = ManualSettle(), Trims()
    monkeypatch.setattr("app.lab.malloc_trim", trims)
    monkeypatch.setattr("app.lab.GiveBack", functools.partial(GiveBack, later=settle.later))
    return settle, trims


@pytest.mark.parametrize("path", ["limited", "batched", "adaptive", "naive"])
async def test_a_crowd_on_any_path_gives_back_once_when_it_is_over(
    path: str, lab_client: LabClientFactory, watched: tuple[ManualSettle, Trims]
) -> None:
    """Twelve at once; while any of them is inferring or waiting there is no trim, and once all have left, one."""
    settle, trims = watched
    scorer = GatedScorer()
    async with lab_client(scorer, batch_max=2, batch_window_s=0.0) as client:
        started = trims.count  # start-up's
        crowd = [
            asyncio.create_task(client.post(f"/api/{path}/predict", json={"text": f"리뷰 {i}"})) for i in range(12)
        ]
        await asyncio.to_thread(scorer.wait_entered)  # the first is on the model; the rest inferring, seated or gone
        await settle.elapse()
        assert trims.count == started  # refusals left, but the crowd is not over
        scorer.open()
        answers = await asyncio.gather(*crowd)
        await settle.elapse()
        assert trims.count == started + 1
        assert {r.status_code for r in answers} <= {200, 429, 503}
    assert started == 1


async def test_a_ticket_crowd_gives_back_once_the_worker_has_run_out_of_jobs(
    lab_client: LabClientFactory, watched: tuple[ManualSettle, Trims]
) -> None:
    settle, trims = watched
    scorer = GatedScorer()
    async with lab_client(scorer) as client:
        tickets = [(await client.post("/api/queue/jobs", json={"text": f"티켓 {i}"})).json() for i in range(3)]
        await asyncio.to_thread(scorer.wait_entered)
        await settle.elapse()
        assert trims.count == 1
        scorer.open()

        async def all_done() -> bool:
            jobs = [(await client.get(f"/api/queue/jobs/{t['job_id']}")).json() for t in tickets]
            return all(job["status"] == "done" for job in jobs)

        await eventually(all_done, limit_s=30)
        await settle.elapse()  # every job's end armed a check, each cancelling the one before: one is left
        assert trims.count == 2


async def test_no_give_back_without_the_trim(lab_client: LabClientFactory, watched: tuple[ManualSettle, Trims]) -> None:
    settle, trims = watched
    async with lab_client(GatedScorer(gated=False), memory_trim=False) as client:
        assert (await client.post("/api/limited/predict", json={"text": "리뷰"})).status_code == 200
        await settle.elapse()
    assert trims.count == 0 and settle.armed == []
