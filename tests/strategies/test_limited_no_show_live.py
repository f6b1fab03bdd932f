"""The class scenario on a real server: a burst of 12 on ② whose refused never come back, then another.

A real `python -m app.serve` on the tiny model slowed to SECONDS_PER_REVIEW (burning CPU, as the box
does). The second burst is fired as the class fires it: as soon as the first burst's last answer is in.
The first burst's holds are then still ahead (one for each seat its admitted free, due one a review);
before 2026-12-03 they chained one a review over the horizon and ② seated 4 or 3 of the second burst
(0 before the seats were work-conserving); now a walk-in may make a returner sit down at most a review late.
"""

import asyncio
import time
from dataclasses import dataclass

import httpx
import pytest

from kit.live import live_server, slowed

pytestmark = pytest.mark.slow

SECONDS_PER_REVIEW = 0.3
BURST = 12
SEATS = 5  # 1 in flight + 4 seats, the default


def review(tag: str, i: int) -> str:
    """Distinct reviews of one length (the box's cost fit then has nothing to tell apart)."""
    return f"{tag} 빵이 맛있어요 {i:02d}"


async def burst(client: httpx.AsyncClient, tag: str) -> list[tuple[httpx.Response, float]]:
    """Twelve distinct reviews at once, each on a connection of its own; nobody sends a Seat-Hold back.
    Each answer comes with when it arrived (monotonic)."""

    async def one(text: str) -> tuple[httpx.Response, float]:
        response = await client.post("/api/limited/predict", json={"text": text})
        return response, time.monotonic()

    return list(await asyncio.gather(*(one(review(tag, i)) for i in range(BURST))))


def statuses(answers: list[tuple[httpx.Response, float]]) -> list[int]:
    return sorted(r.status_code for r, _ in answers)


Answers = list[tuple[httpx.Response, float]]


@dataclass(frozen=True)
class ClassRun:
    first: Answers
    review_s: float  # a review as this host served them: in use before the burst, or the burst's five seats
    again_s: float  # when the class fired again, after the first burst
    held: int  # the holds still out then
    second: Answers


async def class_scenario(url: str) -> ClassRun:
    async with httpx.AsyncClient(base_url=url, timeout=60) as client:
        used = time.monotonic()
        for i in range(8):  # a box in use: its service time is measured on reviews like these, not guessed
            assert (await client.post("/api/limited/predict", json={"text": review("몸", i)})).status_code == 200
        in_use_s = (time.monotonic() - used) / 8
        fired = time.monotonic()
        first = await burst(client, "첫")  # the class fires again at once; none of the refused comes back
        held = (await client.get("/api/stats")).json()["paths"]["limited"]["held"]
        again = time.monotonic() - fired
        second = await burst(client, "둘")
    served_s = max(at for r, at in first if r.status_code == 200) - fired
    return ClassRun(first, max(in_use_s, served_s / SEATS), again, held, second)


def test_a_second_burst_after_a_burst_that_never_came_back_is_served_like_the_first() -> None:
    with live_server(**slowed(SECONDS_PER_REVIEW)) as server:
        run = asyncio.run(class_scenario(server.url))
    assert statuses(run.first) == [200] * SEATS + [429] * (BURST - SEATS)
    held = [bool(r.headers.get("Seat-Hold")) for r, _ in run.first if r.status_code == 429]
    assert held.count(True) == SEATS  # one hold for each seat the admitted free; the other two hear only when
    # The class fires again within 5 s, stretched as much as this host stretched the box's reviews (a busy
    # host serves each slower than SECONDS_PER_REVIEW, and every Retry-After follows the time the box measured).
    assert run.again_s <= 5.0 * max(1.0, run.review_s / SECONDS_PER_REVIEW), run
    assert run.held > 0  # the no-shows' holds were still live when the second came
    assert statuses(run.second) == [200] * SEATS + [429] * (BURST - SEATS)  # before: held seats counted as taken
