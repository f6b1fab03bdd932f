"""SIGTERM: stop accepting, finish what is in flight, keep accepted tickets, exit cleanly (real uvicorn)."""

import asyncio
import signal
from pathlib import Path

import httpx
import pytest

from app.jobs.factory import open_store
from kit.live import LiveServer, live_server, slowed
from tests.waiting import eventually

# Starts a real uvicorn server in a subprocess.
pytestmark = pytest.mark.slow


async def refuses_new_connections(url: str) -> bool:
    async with httpx.AsyncClient(base_url=url, timeout=5) as fresh:
        try:
            await fresh.get("/health")
        except (httpx.ConnectError, httpx.ReadError, httpx.RemoteProtocolError):
            # Refused, or accepted by the kernel's backlog just before the socket closed and then dropped.
            return True
    return False


async def terminated(server: LiveServer) -> int:
    server.process.send_signal(signal.SIGTERM)
    await eventually(lambda: refuses_new_connections(server.url), limit_s=30)
    return await asyncio.to_thread(server.process.wait, 60)


def exited_cleanly(returncode: int, log: str) -> bool:
    # uvicorn re-raises the signal after a graceful shutdown, so -SIGTERM is a clean exit too.
    return returncode in (0, -signal.SIGTERM) and "Application shutdown complete" in log and "Traceback" not in log


async def test_sigterm_finishes_in_flight_requests_and_exits_cleanly() -> None:
    with live_server(**slowed(2, warm=False)) as server:
        async with httpx.AsyncClient(base_url=server.url, timeout=60) as client:
            texts = ["종료 직전 리뷰 1", "종료 직전 리뷰 2"]
            in_flight = [asyncio.create_task(client.post("/api/limited/predict", json={"text": t})) for t in texts]

            async def both_admitted() -> bool:
                return bool((await client.get("/api/stats")).json()["paths"]["limited"]["seats_taken"] == 2)

            await eventually(both_admitted, limit_s=30)
            returncode = await terminated(server)
            responses = await asyncio.gather(*in_flight)
        log = server.log()
    assert [r.status_code for r in responses] == [200, 200]
    assert exited_cleanly(returncode, log), log


async def durable_store_url(tmp_path: Path) -> str:
    """A store that outlives the process (sqlite, the default kind); memory:// cannot keep tickets."""
    url = f"sqlite:///{tmp_path / 'jobs.db'}"
    try:
        store = await open_store(url)
    except ValueError:
        pytest.skip("no durable job store in this build (LAB_JOB_STORE=memory:// loses tickets by design)")
    await store.close()
    return url


async def test_sigterm_keeps_accepted_tickets_for_the_next_start(tmp_path: Path) -> None:
    store = await durable_store_url(tmp_path)
    with live_server(LAB_JOB_STORE=store, **slowed(1, warm=False)) as first:
        async with httpx.AsyncClient(base_url=first.url, timeout=30) as client:
            submitted = [await client.post("/api/queue/jobs", json={"text": f"종료 전 티켓 {i}"}) for i in range(3)]

            async def one_running() -> bool:
                return bool((await client.get("/api/stats")).json()["lane"]["busy"])

            await eventually(one_running, limit_s=30)
            returncode = await terminated(first)
        assert exited_cleanly(returncode, first.log()), first.log()
    assert [r.status_code for r in submitted] == [202, 202, 202]
    with live_server(LAB_JOB_STORE=store) as second:
        async with httpx.AsyncClient(base_url=second.url, timeout=30) as client:

            async def all_done() -> bool:
                jobs = [(await client.get(r.headers["Location"])).json() for r in submitted]
                return all(job["status"] == "done" for job in jobs)

            await eventually(all_done, limit_s=60)
