"""A store that can no longer keep tickets makes /health 503 and refuses new tickets.

Deleting or replacing the sqlite file while serving went unnoticed: 202s continued into a
file nobody would read again, /health stayed 200, and every ticket was gone after a restart.
"""

import os
import sqlite3
from pathlib import Path

import httpx
import pytest

from app.jobs.redis import RedisJobStore
from app.jobs.sqlite import SqliteJobStore
from kit.live import live_server
from kit.local import redis_db
from kit.serverproc import free_port
from tests.conftest import LabClientFactory
from tests.fakes import GatedScorer


async def assert_store_down(client: httpx.AsyncClient, why: str) -> None:
    health = await client.get("/health")
    stats = await client.get("/api/stats")
    ticket = await client.post("/api/queue/jobs", json={"text": "갈 곳 없는 리뷰"})
    assert health.status_code == 503 and why in health.json()["store"]
    assert stats.status_code == 200 and why in stats.json()["store"]["problem"]
    assert ticket.status_code == 503 and ticket.json()["error"] == "store_unavailable"


async def test_deleted_sqlite_file_makes_health_503(lab_client: LabClientFactory, tmp_path: Path) -> None:
    async with lab_client(GatedScorer(gated=False), job_store=f"sqlite:///{tmp_path / 'jobs.db'}") as client:
        before = await client.get("/health")
        (tmp_path / "jobs.db").unlink()
        await assert_store_down(client, "deleted")
    assert before.status_code == 200


async def test_replaced_sqlite_file_makes_health_503(lab_client: LabClientFactory, tmp_path: Path) -> None:
    async with lab_client(GatedScorer(gated=False), job_store=f"sqlite:///{tmp_path / 'jobs.db'}") as client:
        before = await client.get("/health")
        sqlite3.connect(tmp_path / "other.db").close()
        os.replace(tmp_path / "other.db", tmp_path / "jobs.db")
        await assert_store_down(client, "replaced")
    assert before.status_code == 200


async def test_unreachable_redis_makes_health_503(lab_client: LabClientFactory) -> None:
    nobody = f"redis://127.0.0.1:{free_port()}/0?prefix=lab-test-nobody"
    async with lab_client(GatedScorer(gated=False), job_store=nobody, job_poll_s=0.05) as client:
        await assert_store_down(client, "does not answer")


async def test_healthy_stores_report_no_problem(tmp_path: Path, redis_prefix: str) -> None:
    sqlite = await SqliteJobStore(tmp_path / "jobs.db").open()
    redis = RedisJobStore(redis_db(5, f"prefix={redis_prefix}"))
    try:
        assert await sqlite.check() is None and await redis.check() is None
    finally:
        await sqlite.close()
        await redis.close()


@pytest.mark.slow
def test_a_live_server_notices_its_database_deleted(tmp_path: Path) -> None:
    db = tmp_path / "jobs.db"
    with live_server(LAB_JOB_STORE=f"sqlite:///{db}") as server, httpx.Client(base_url=server.url) as client:
        before = (client.get("/health").status_code, client.post("/api/queue/jobs", json={"text": "전"}).status_code)
        db.unlink()
        after = (client.get("/health").status_code, client.post("/api/queue/jobs", json={"text": "후"}).status_code)
    assert before == (200, 202) and after == (503, 503)
