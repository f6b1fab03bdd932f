"""The one request-sending core: a closed burst reads every answer and follows every ticket to its end."""

import httpx
from asgi_lifespan import LifespanManager

from app.main import create_app
from app.settings import Settings
from kit.fire import fire_burst, send
from kit.serverproc import free_port
from tests.fakes import GatedScorer


async def test_a_burst_reads_each_answer_and_follows_each_ticket_to_its_end() -> None:
    app = create_app(Settings(warmup=False, job_store="memory://", batch_max=3), GatedScorer(gated=False))
    async with LifespanManager(app) as manager:
        transport = httpx.ASGITransport(app=manager.app)
        tickets, wall_s = await fire_burst("http://lab", "tickets", ["번호표 1", "번호표 2"], transport)
        batched, _ = await fire_burst("http://lab", "batched", [f"배치 {i}" for i in range(3)], transport)
        again, _ = await fire_burst("http://lab", "batched", ["배치 0"], transport)
    assert [(r.status, r.final) for r in tickets] == [(202, "done"), (202, "done")]
    assert all(r.infer_s is not None and r.round_trip_s <= wall_s for r in tickets)
    assert [(r.status, r.final, r.batch_size) for r in batched] == [(200, None, 3)] * 3
    assert [(r.status, r.cache_hit) for r in again] == [(200, True)]


async def test_send_turns_a_refused_connection_into_an_answer_without_a_status() -> None:
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{free_port()}") as client:
        answer = await send(client, "/api/naive/predict", {"text": "아무도 없나요"})
    assert (answer.status, answer.error, answer.response) == (0, "connect_refused", None)
    assert answer.timing_ms == {} and answer.batch_size is None and answer.retry_after_s is None
