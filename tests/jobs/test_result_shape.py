"""A done ticket's `result` is `{"topics": [...]}` as in the handout, the same in GET, events and webhook.

It was a bare list; clients written from the handout read `result.topics`. Records stored
in the old form still read back in the new one.
"""

import json
import sqlite3
from pathlib import Path

from redis.asyncio import Redis

from app.jobs.models import Expect, Job, JobStatus
from app.jobs.redis import RedisJobStore
from app.jobs.sqlite import SqliteJobStore
from kit.webhook_receiver import webhook_receiver
from tests.conftest import LabClientFactory
from tests.fakes import GatedScorer, fake_ranking
from tests.jobs.conftest import REDIS_URL
from tests.jobs.test_lifecycle import parse_events
from tests.jobs.test_webhooks import HOOKS, webhook_settles

OLD_RESULT = [{"id": "x", "label": "맛", "score": 0.9}]


async def test_get_events_and_webhook_all_carry_result_topics(lab_client: LabClientFactory) -> None:
    async with webhook_receiver() as receiver, lab_client(GatedScorer(gated=False), **HOOKS) as client:
        submitted = await client.post("/api/queue/jobs", json={"text": "모양 리뷰", "webhook_url": receiver.url})
        job_id = submitted.json()["job_id"]
        (delivery,) = await receiver.wait_for(1)
        final = await webhook_settles(client, job_id, "delivered")
        events = parse_events((await client.get(f"/api/queue/jobs/{job_id}/events")).text)
    expected = {"topics": [{"id": t.id, "label": t.label, "score": t.score} for t in fake_ranking("모양 리뷰")]}
    assert final["result"] == expected
    assert events[-1]["result"] == expected
    assert json.loads(delivery.body)["data"]["output"] == expected


async def test_a_cache_hit_ticket_has_the_same_shape(lab_client: LabClientFactory) -> None:
    async with lab_client(GatedScorer(gated=False), job_poll_s=0.02) as client:
        first = await client.post("/api/limited/predict", json={"text": "캐시 모양"})  # fills the cache
        hit = await client.post("/api/queue/jobs", json={"text": "캐시 모양"})
    assert first.status_code == 200 and hit.headers["X-Cache"] == "hit"
    assert hit.json()["status"] == "done" and hit.json()["result"] == {"topics": first.json()["topics"]}


def old_job() -> Job:
    job = Job(text="예전 리뷰")
    job.status, job.finished_at = JobStatus.DONE, job.enqueued_at
    return job


async def test_sqlite_reads_a_result_stored_as_a_bare_list(tmp_path: Path) -> None:
    store = await SqliteJobStore(tmp_path / "jobs.db").open()
    try:
        job, _ = await store.add(old_job())
        await store.close()
        with sqlite3.connect(tmp_path / "jobs.db") as db:
            doc = json.loads(db.execute("SELECT doc FROM jobs WHERE id = ?", (job.id,)).fetchone()[0])
            doc["result"] = OLD_RESULT
            db.execute("UPDATE jobs SET doc = ? WHERE id = ?", (json.dumps(doc), job.id))
        store = await SqliteJobStore(tmp_path / "jobs.db").open()
        stored = await store.get(job.id)
    finally:
        await store.close()
    assert stored is not None and stored.result == {"topics": OLD_RESULT}


async def test_redis_reads_a_result_stored_as_a_bare_list(redis_prefix: str) -> None:
    store = RedisJobStore(f"{REDIS_URL}?prefix={redis_prefix}")
    raw = Redis.from_url(REDIS_URL)
    try:
        job, _ = await store.add(old_job())
        await raw.hset(f"{redis_prefix}:job:{job.id}", "result", json.dumps(OLD_RESULT))
        stored = await store.get(job.id)
        assert stored is not None and stored.result == {"topics": OLD_RESULT}
        assert await store.replace(stored, Expect(JobStatus.DONE))  # written back in the new form
        again = await raw.hget(f"{redis_prefix}:job:{job.id}", "result")
    finally:
        await store.close()
        await raw.aclose()
    assert again is not None and json.loads(again) == {"topics": OLD_RESULT}
