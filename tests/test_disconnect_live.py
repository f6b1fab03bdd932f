"""Over real HTTP: a client that hangs up while seated on path ② is noticed by uvicorn and never inferred."""

import asyncio

import httpx
import pytest

from kit.live import live_server, slowed
from tests.waiting import eventually

# Starts a real uvicorn server in a subprocess.
pytestmark = pytest.mark.slow


def gone_total(metrics_text: str, path: str) -> float:
    prefix = f'review_client_gone_total{{path="{path}"}} '
    return sum(float(line[len(prefix) :]) for line in metrics_text.splitlines() if line.startswith(prefix))


async def test_hanging_up_on_a_real_server_frees_the_seat_and_skips_the_inference() -> None:
    with live_server(**slowed(2, warm=False)) as server:
        async with httpx.AsyncClient(base_url=server.url, timeout=60) as client:
            before = (await client.get("/api/stats")).json()["lane"]["completed"]
            first = asyncio.create_task(client.post("/api/limited/predict", json={"text": "남는 손님"}))

            async def seats_taken(n: int) -> bool:
                return bool((await client.get("/api/stats")).json()["paths"]["limited"]["seats_taken"] == n)

            await eventually(lambda: seats_taken(1), limit_s=30)
            async with httpx.AsyncClient(base_url=server.url, timeout=60) as leaving_client:
                leaver = asyncio.create_task(leaving_client.post("/api/limited/predict", json={"text": "떠난 손님"}))
                await eventually(lambda: seats_taken(2), limit_s=30)
                leaver.cancel()  # closes its connection mid-request, as a closed browser tab would
            await eventually(lambda: seats_taken(1), limit_s=30)
            assert (await first).status_code == 200
            stats = (await client.get("/api/stats")).json()
            metrics = (await client.get("/metrics")).text
    assert stats["lane"]["completed"] == before + 1  # only the client that stayed was inferred
    assert gone_total(metrics, "limited") == 1
