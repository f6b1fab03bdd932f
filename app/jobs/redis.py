"""Jobs in Redis: one queue shared by several boxes; every transition is one Lua script (in lua/).

Keys under one prefix (`?prefix=` in the URL, default `lab:jobs`):
`{p}:job:{id}` hash (each field JSON), `{p}:queued` zset by seq, `{p}:running` zset by
lease end, `{p}:finished` zset by finish time, `{p}:webhooks` zset by next delivery,
`{p}:idem:{key}` → id, `{p}:seq`, `{p}:counts` (terminal statuses), `{p}:workers` zset,
`{p}:version` (grows with every change to a job, for watchers).
Scripts build key names from the prefix, so this assumes one Redis, not a cluster.
"""

import asyncio
import functools
import json
from importlib import resources
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit, urlunsplit

from redis.asyncio import BlockingConnectionPool, Redis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError
from redis.exceptions import TimeoutError as RedisTimeoutError

from app.errors import StoreUnavailable
from app.jobs.models import Expect, Job, JobStatus, WebhookState
from app.jobs.store import CLAIM_SCAN, Ahead, QueueFull, empty_counts, is_overdue

DEFAULT_PREFIX = "lab:jobs"
# A burst waits for a free connection instead of failing: redis-py's default pool raises
# `Too many connections` past its cap (200 concurrent POSTs gave 150 × 500). Each command
# holds a connection for well under a millisecond, so 64 serve hundreds of waiting requests;
# a request that still finds none within POOL_TIMEOUT_S fails (the bound). Both can be set in
# the URL: `redis://host:6379/0?max_connections=128&timeout=2`.
POOL_MAX_CONNECTIONS = 64
POOL_TIMEOUT_S = 10.0
# /health asks Redis for a PING; longer than this is as good as no answer.
PING_TIMEOUT_S = 2.0

# The scripts live in lua/ beside this module, so they are read, diffed and linted as Lua;
# each is sent with common.lua's helpers in front, since a Redis script cannot include another.


@functools.cache
def lua(name: str) -> str:
    """The source of script `name`, read once per process, common helpers first."""
    folder = resources.files("app.jobs").joinpath("lua")
    return folder.joinpath("common.lua").read_text("utf-8") + folder.joinpath(f"{name}.lua").read_text("utf-8")


def split_prefix(url: str) -> tuple[str, str]:
    """`redis://host:6379/0?prefix=lab:jobs` → (URL for redis-py, key prefix)."""
    parts = urlsplit(url)
    query = parse_qs(parts.query)
    prefix = query.pop("prefix", [DEFAULT_PREFIX])[0]
    rest = urlencode({k: v[0] for k, v in query.items()})
    return urlunsplit(parts._replace(query=rest)), prefix


def _text(value: Any) -> str:
    return "" if value is None else str(value)


class RedisJobStore:
    """The shared-queue store; a claim or a conditional write is one atomic script."""

    def __init__(self, url: str) -> None:
        redis_url, self.prefix = split_prefix(url)
        pool = BlockingConnectionPool.from_url(
            redis_url, max_connections=POOL_MAX_CONNECTIONS, timeout=POOL_TIMEOUT_S, decode_responses=True
        )
        self._redis: Redis = Redis.from_pool(pool)
        self._add = self._redis.register_script(lua("add"))
        self._replace = self._redis.register_script(lua("replace"))
        self._claim = self._redis.register_script(lua("claim"))
        self._heartbeat = self._redis.register_script(lua("heartbeat"))
        self._forget = self._redis.register_script(lua("forget"))
        self._ahead = self._redis.register_script(lua("ahead"))

    def _key(self, name: str) -> str:
        return f"{self.prefix}:{name}"

    @staticmethod
    def _fields(job: Job) -> list[str]:
        pairs: list[str] = []
        for name, value in job.to_dict().items():
            if name != "seq":  # the store owns seq
                pairs += [name, json.dumps(value, ensure_ascii=False)]
        return pairs

    @staticmethod
    def _hints(job: Job) -> list[str]:
        """What the scripts need to keep the indexes right, as plain strings."""
        webhook = "" if job.webhook_state is None else job.webhook_state.value
        return [job.status.value, _text(job.lease_until), _text(job.finished_at), webhook, _text(job.webhook_next_at)]

    @staticmethod
    def _decode(raw: Any) -> Job | None:
        """A hash as HGETALL (a dict) or as a script returns it (a flat list)."""
        if isinstance(raw, list):
            raw = dict(zip(raw[::2], raw[1::2], strict=True))
        if not raw:
            return None
        return Job.from_dict({name: json.loads(value) for name, value in raw.items()})

    async def add(self, job: Job, max_queued: int | None = None) -> tuple[Job, bool]:
        args = [self.prefix, job.id, job.idempotency_key or "", _text(max_queued), *self._hints(job)]
        try:
            outcome, value, *ahead = await self._add(args=[*args, *self._fields(job)])
        except (RedisConnectionError, RedisTimeoutError) as exc:  # a 503 the client can retry, not a 500
            raise StoreUnavailable(f"the job store (Redis) does not answer: {exc}") from exc
        if outcome == 2:
            raise QueueFull(int(value))
        if outcome == 0:
            held = await self.get(str(value))
            assert held is not None, "an idempotency key points at a job that is gone"
            return held, False
        job.seq = int(value)
        if job.status is JobStatus.QUEUED:
            job.ahead_at_add = int(ahead[0])
        return job, True

    async def get(self, job_id: str) -> Job | None:
        raw: Any = await self._redis.hgetall(self._key(f"job:{job_id}"))
        return self._decode(raw)

    async def _get_many(self, ids: Any) -> list[Job]:
        async with self._redis.pipeline(transaction=False) as pipe:
            for job_id in ids:
                pipe.hgetall(self._key(f"job:{job_id}"))
            raws = await pipe.execute()
        return [job for raw in raws if (job := self._decode(raw)) is not None]

    async def get_by_idempotency_key(self, key: str) -> Job | None:
        job_id = await self._redis.get(self._key(f"idem:{key}"))
        return None if job_id is None else await self.get(str(job_id))

    async def claim_next(self, owner: str, lease_s: float, now: float) -> Job | None:
        raw = await self._claim(args=[self.prefix, owner, repr(lease_s), repr(now), CLAIM_SCAN])
        return self._decode(raw) if raw else None

    async def replace(self, job: Job, expect: Expect) -> bool:
        fences = [expect.status.value, _text(expect.owner), _text(expect.attempts), _text(expect.lapsed_by)]
        fences.append(_text(expect.webhook_attempts))
        args = [self.prefix, job.id, *fences, *self._hints(job), *self._fields(job)]
        return bool(await self._replace(args=args))

    async def heartbeat(self, owner: str, lease_s: float, now: float) -> set[str]:
        held = await self._heartbeat(args=[self.prefix, owner, repr(lease_s), repr(now)])
        return set(held)

    async def lapsed(self, now: float) -> list[Job]:
        ids = await self._redis.zrangebyscore(self._key("running"), "-inf", f"({now!r}")
        return [job for job in await self._get_many(ids) if job.status is JobStatus.RUNNING]

    async def overdue(self, now: float) -> list[Job]:
        ids = await self._redis.zrange(self._key("queued"), 0, -1)
        return [job for job in await self._get_many(ids) if is_overdue(job, now)]

    async def webhooks_due(self, now: float, limit: int) -> list[Job]:
        ids = await self._redis.zrangebyscore(self._key("webhooks"), "-inf", repr(now), start=0, num=limit)
        return [job for job in await self._get_many(ids) if job.webhook_state is WebhookState.PENDING]

    async def ahead(self, job_id: str) -> Ahead | None:
        found = await self._ahead(args=[self.prefix, job_id])
        return Ahead(int(found[0]), int(found[1])) if found else None

    async def counts(self) -> dict[str, int]:
        async with self._redis.pipeline(transaction=True) as pipe:
            pipe.zcard(self._key("queued"))
            pipe.zcard(self._key("running"))
            pipe.hgetall(self._key("counts"))
            queued, running, finished = await pipe.execute()
        counts = empty_counts()
        counts.update({status: int(count) for status, count in finished.items() if status in counts})
        counts[JobStatus.QUEUED.value], counts[JobStatus.RUNNING.value] = int(queued), int(running)
        return counts

    async def live_workers(self, now: float) -> int:
        return max(1, int(await self._redis.zcount(self._key("workers"), repr(now), "+inf")))

    async def forget_finished(self, before: float) -> int:
        return int(await self._forget(args=[self.prefix, repr(before), 1000]))

    async def version(self) -> int:
        return int(await self._redis.get(self._key("version")) or 0)

    async def check(self) -> str | None:
        try:
            async with asyncio.timeout(PING_TIMEOUT_S):
                await self._redis.ping()
        except (RedisError, OSError, TimeoutError) as exc:
            return f"the job store (Redis) does not answer a PING: {type(exc).__name__}: {exc}"
        return None

    async def close(self) -> None:
        await self._redis.aclose()
