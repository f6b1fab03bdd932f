"""A death ends what waited for the dead box: burst.py's 50 at ① kill it once, then the class is served again."""

import asyncio
import time
from types import ModuleType

import httpx
import psutil
import pytest

from tests.box import test_box_live as live
from tests.box.test_box_live import CAP, LONG_REVIEW, boxed
from tests.test_burst_cli import burst  # noqa: F401  (the fixture: burst.py imported as the students run it)
from tests.waiting import eventually

pytestmark = pytest.mark.slow


async def first_200(url: str, limit_s: float, **post: object) -> float:
    """The wall-clock time (time.time(), as the box's last_death.at) at which `url` first answers 200."""
    async with httpx.AsyncClient(timeout=30) as client:
        deadline = time.monotonic() + limit_s
        while time.monotonic() < deadline:
            try:
                response = await (client.post(url, **post) if post else client.get(url))  # type: ignore[arg-type]
                if response.status_code == 200:
                    return time.time()
            except httpx.TransportError:
                pass
            await asyncio.sleep(0.05)
    raise TimeoutError(f"{url} never answered 200 within {limit_s} s")


def test_burst_py_50_naive_kills_the_box_once_and_it_serves_again(burst: ModuleType) -> None:  # noqa: F811
    """The queued half of the burst is not handed to the next incarnation, where it would kill it again."""
    with boxed(LAB_MEMORY_CAP_BYTES=str(CAP), LAB_BOX_SECONDS_PER_REVIEW="0") as box:
        tickets = [httpx.post(f"{box.url}/api/queue/jobs", json={"text": f"살아남을 티켓 {i}"}) for i in range(3)]
        assert {t.status_code for t in tickets} <= {200, 202}
        rows = burst.fire_burst(box.url, "naive", [f"{LONG_REVIEW} {i}" for i in range(50)], timeout_s=120)
        assert any(row.error for row in rows)  # those the dead box held or that waited for it: an error, not a hang
        asyncio.run(first_200(f"{box.url}/health", limit_s=60))  # a failure guard, not a timing claim
        death = box.stats()["last_death"]
        assert death is not None and death["cause"] == "memory_cap"
        limited = f"{box.url}/api/limited/predict"
        asyncio.run(first_200(limited, limit_s=60, json={"text": "다시 살았나요?"}))

        async def tickets_done() -> bool:
            async with httpx.AsyncClient(base_url=box.url, timeout=30) as client:
                jobs = [(await client.get(f"/api/queue/jobs/{t.json()['job_id']}")).json() for t in tickets]
            return all(job["status"] == "done" for job in jobs)

        asyncio.run(eventually(tickets_done, limit_s=120))
        assert box.stats()["deaths"] == 1


def test_a_crowd_that_comes_while_the_box_restarts_is_refused_not_handed_to_it() -> None:
    """① 50 kill the box; 30 more ① sent once the next incarnation is starting are refused at once
    instead of waiting for its model and reaching it as one crowd (which killed it: 2 deaths, 0/30)."""
    with boxed(LAB_MEMORY_CAP_BYTES=str(CAP), LAB_BOX_SECONDS_PER_REVIEW="0") as box:
        supervisor = psutil.Process(box.process.pid)
        first = {child.pid for child in supervisor.children()}
        crowd = live.burst(box.url, "naive", 50, LONG_REVIEW)
        assert any(r.status == 0 for r in crowd)

        async def next_incarnation_starting() -> bool:
            return bool({child.pid for child in supervisor.children()} - first)

        asyncio.run(eventually(next_incarnation_starting, limit_s=120))  # its socket is bound: it is loading
        during = live.burst(box.url, "naive", 30, LONG_REVIEW)
        sent = time.time()
        assert [r.status for r in during] == [0] * 30  # refused: no connection, nothing waited for the model
        health_at = asyncio.run(first_200(f"{box.url}/health", limit_s=120))
        served_at = asyncio.run(first_200(f"{box.url}/api/limited/predict", limit_s=120, json={"text": "돌아왔나요?"}))
        stats = box.stats()
        assert stats["deaths"] == 1 and stats["incarnation"] == 2
        print(f"after the crowd: /health at +{health_at - sent:.1f} s, ② served at +{served_at - sent:.1f} s")
