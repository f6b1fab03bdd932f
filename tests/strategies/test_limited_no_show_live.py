"""The class scenario on a real server: a burst of 12 on ② whose refused never come back, then another.

A real `python -m app.serve` on the tiny model slowed to SECONDS_PER_REVIEW (burning CPU, as the box
does). The second burst is fired when the first burst's refused were told to come back (the latest
Retry-After) and none of them does: their holds are past due but still live in their grace window, which
before kept ② shut (0 × 200 in class); now their seats are everyone's again.
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
        first = await burst(client, "첫")
        # Every refused was due by the time its answer arrived plus its Retry-After; none comes back.
        due = max(at + int(r.headers["Retry-After"]) for r, at in first if r.status_code == 429)
        # The scenario's own time, not a wait for a condition: the class fires again once all were due.
        await asyncio.sleep(max(0.0, due + 0.1 - time.monotonic()))
        held = (await client.get("/api/stats")).json()["paths"]["limited"]["held"]
        again = time.monotonic() - fired
        second = await burst(client, "둘")
    served_s = max(at for r, at in first if r.status_code == 200) - fired
    return ClassRun(first, max(in_use_s, served_s / SEATS), again, held, second)


def test_a_second_burst_after_a_burst_that_never_came_back_is_served_like_the_first() -> None:
    with live_server(**slowed(SECONDS_PER_REVIEW)) as server:
        run = asyncio.run(class_scenario(server.url))
    assert statuses(run.first) == [200] * SEATS + [429] * (BURST - SEATS)
    assert all(r.headers.get("Seat-Hold") for r, _ in run.first if r.status_code == 429)  # each held a seat
    # The class fires again within 5 s, stretched as much as this host stretched the box's reviews (a busy
    # host serves each slower than SECONDS_PER_REVIEW, and every Retry-After follows the time the box measured).
    assert run.again_s <= 5.0 * max(1.0, run.review_s / SECONDS_PER_REVIEW), run
    assert run.held > 0  # the no-shows' holds were still live (within their grace window) when the second came
    assert statuses(run.second) == [200] * SEATS + [429] * (BURST - SEATS)  # before: held seats counted as taken
