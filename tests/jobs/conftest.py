"""Every job store under one fixture, so one behavioural suite runs against all three.

Redis tests use the real server at LAB_TEST_REDIS_URL (127.0.0.1:6379), a db of their own and a key prefix
unique to the test, and delete every key under that prefix afterwards.
"""

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest
from redis.asyncio import Redis

from app.jobs.factory import open_store
from app.jobs.store import JobStore
from kit.local import redis_db

REDIS_URL = redis_db(5)
STORE_KINDS = ["memory", "sqlite", "redis"]
StoreOpener = Callable[[], Awaitable[JobStore]]


async def drop_redis_prefix(prefix: str, url: str = REDIS_URL) -> None:
    redis = Redis.from_url(url)
    try:
        keys = [key async for key in redis.scan_iter(match=f"{prefix}:*", count=500)]
        if keys:
            await redis.delete(*keys)
    finally:
        await redis.aclose()


@pytest.fixture
async def redis_prefix() -> AsyncIterator[str]:
    prefix = f"lab-test-{uuid.uuid4().hex[:12]}"
    yield prefix
    await drop_redis_prefix(prefix)


@pytest.fixture(params=STORE_KINDS)
def store_url(request: pytest.FixtureRequest, tmp_path: Path, redis_prefix: str) -> str:
    """A `LAB_JOB_STORE` URL for each kind, private to this test."""
    kind: str = request.param
    if kind == "memory":
        return "memory://"
    if kind == "sqlite":
        return f"sqlite:///{tmp_path / 'jobs.db'}"
    return f"{REDIS_URL}?prefix={redis_prefix}"


@pytest.fixture
async def store_opener(store_url: str) -> AsyncIterator[StoreOpener]:
    """Opens as many handles on the same store as a test wants ("boxes"); closes them all."""
    opened: list[JobStore] = []

    async def opener() -> JobStore:
        store = await open_store(store_url)
        opened.append(store)
        return store

    yield opener
    for store in opened:
        await store.close()


@pytest.fixture
async def store(store_opener: StoreOpener) -> JobStore:
    return await store_opener()
