"""⑤ on a real server, slowed to half a second a review: one student's twelve do not take eleven classmates'
places, a lone student's fifty are served as far as the promise allows, and every admitted request is answered
within its promise (the server's own `late` count stays 0). Long reviews and busy neighbours are promised by
rules tested on a fake clock (test_adaptive.py) and measured on a pinned core (bench.adaptive): on a shared
host, a 20-second review's wall time moves with whatever else runs."""

import asyncio
from collections.abc import Iterator

import httpx
import pytest

from kit.live import LiveServer, live_server, slowed

pytestmark = pytest.mark.slow

TEXT = "배송이 빨랐고 포장도 꼼꼼했어요. 다음에도 여기서 살게요"


@pytest.fixture(scope="module")
def server() -> Iterator[LiveServer]:
    with live_server(**slowed(0.5)) as running:  # warm: ⑤ predicts from lengths the start-up measured
        yield running


def student(i: int) -> dict[str, str]:
    return {"Cookie": f"lab_student=student-{i:02d}-{'x' * 10}"}


async def fire(client: httpx.AsyncClient, path: str, texts: list[str], who: dict[str, str]) -> list[int]:
    replies = await asyncio.gather(*(client.post(f"/api/{path}/predict", json={"text": t}, headers=who) for t in texts))
    return [r.status_code for r in replies]


async def late(client: httpx.AsyncClient) -> int:
    return int((await client.get("/api/stats")).json()["paths"]["adaptive"]["late"])


async def test_a_class_crowd_and_one_students_fifty_keep_their_promises_and_their_places(server: LiveServer) -> None:
    async with httpx.AsyncClient(base_url=server.url, timeout=120) as client:
        one = [f"{TEXT} {k}" for k in range(12)]
        crowd = await asyncio.gather(
            fire(client, "adaptive", [f"{t} a" for t in one], student(0)),  # one student's twelve
            *(fire(client, "adaptive", [f"{TEXT} 학생 {i}"], student(i)) for i in range(1, 12)),  # eleven's one
        )
        mine, theirs = crowd[0].count(200), sum(c.count(200) for c in crowd[1:])
        assert mine <= 1, f"one student's twelve took {mine} places; classmates got {theirs}"
        assert theirs >= 1 and {status for statuses in crowd for status in statuses} <= {200, 429}, crowd
        assert await late(client) == 0

        fifty = await fire(client, "adaptive", [f"{TEXT} 혼자 {k}" for k in range(50)], student(20))
        assert fifty.count(200) >= 2 and set(fifty) <= {200, 429}
        assert await late(client) == 0
