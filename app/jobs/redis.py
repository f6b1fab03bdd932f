"""Jobs in Redis: one queue shared by several boxes; every transition is one Lua script.

Keys under one prefix (`?prefix=` in the URL, default `lab:jobs`):
`{p}:job:{id}` hash (each field JSON), `{p}:queued` zset by seq, `{p}:running` zset by
lease end, `{p}:finished` zset by finish time, `{p}:webhooks` zset by next delivery,
`{p}:idem:{key}` → id, `{p}:seq`, `{p}:counts` (terminal statuses), `{p}:workers` zset,
`{p}:version` (grows with every change to a job, for watchers).
Scripts build key names from the prefix, so this assumes one Redis, not a cluster.
"""

import asyncio
import json
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

LUA_COMMON = """
local prefix = ARGV[1]
local terminal = {done=true, failed=true, expired=true, canceled=true}
local function jobkey(id) return prefix .. ':job:' .. id end
local function get(key, name)
  local raw = redis.call('HGET', key, name)
  if not raw then return nil end
  local value = cjson.decode(raw)
  if value == cjson.null then return nil end
  return value
end
local function num(s) if s == nil or s == '' then return 0 end return tonumber(s) end
local function index(id, old, new, seq, lease, finished, wstate, wnext)
  if old == 'queued' then redis.call('ZREM', prefix .. ':queued', id) end
  if old == 'running' then redis.call('ZREM', prefix .. ':running', id) end
  if new == 'queued' then redis.call('ZADD', prefix .. ':queued', seq, id) end
  if new == 'running' then redis.call('ZADD', prefix .. ':running', num(lease), id) end
  if terminal[new] and not (old and terminal[old]) then
    redis.call('ZADD', prefix .. ':finished', num(finished), id)
    redis.call('HINCRBY', prefix .. ':counts', new, 1)
  end
  if wstate == 'pending' then
    redis.call('ZADD', prefix .. ':webhooks', num(wnext), id)
  else
    redis.call('ZREM', prefix .. ':webhooks', id)
  end
end
"""

# ARGV: prefix, id, idempotency key or '', max queued or '', status, lease_until, finished_at,
# webhook_state, webhook_next_at, then field/value pairs.
# Returns {1, seq, jobs queued or running before it}, {0, id holding the key} or {2, jobs queued}
# when the queue is full.
LUA_ADD = (
    LUA_COMMON
    + """
local id, idem = ARGV[2], ARGV[3]
if idem ~= '' then
  local held = redis.call('GET', prefix .. ':idem:' .. idem)
  if held then return {0, held} end
end
if ARGV[5] == 'queued' and ARGV[4] ~= '' then
  local queued = redis.call('ZCARD', prefix .. ':queued')
  if queued >= tonumber(ARGV[4]) then return {2, queued} end
end
local seq = redis.call('INCR', prefix .. ':seq')
local key = jobkey(id)
redis.call('HSET', key, 'seq', seq, unpack(ARGV, 10))
local ahead = 0
if ARGV[5] == 'queued' then
  ahead = redis.call('ZCARD', prefix .. ':queued') + redis.call('ZCARD', prefix .. ':running')
  redis.call('HSET', key, 'ahead_at_add', ahead)
end
if idem ~= '' then redis.call('SET', prefix .. ':idem:' .. idem, id) end
index(id, nil, ARGV[5], seq, ARGV[6], ARGV[7], ARGV[8], ARGV[9])
redis.call('INCR', prefix .. ':version')
return {1, seq, ahead}
"""
)

# ARGV: prefix, id, expected status, owner, attempts, lapsed_by, webhook_attempts ('' = any),
# new status, lease_until, finished_at, webhook_state, webhook_next_at, then field/value pairs.
LUA_REPLACE = (
    LUA_COMMON
    + """
local id = ARGV[2]
local key = jobkey(id)
local old = get(key, 'status')
if old == nil or old ~= ARGV[3] then return 0 end
local new = ARGV[8]
if terminal[old] and new ~= old then return 0 end
if ARGV[4] ~= '' and get(key, 'owner') ~= ARGV[4] then return 0 end
if ARGV[5] ~= '' and get(key, 'attempts') ~= tonumber(ARGV[5]) then return 0 end
if ARGV[6] ~= '' then
  local lease = get(key, 'lease_until')
  if lease == nil or lease > tonumber(ARGV[6]) then return 0 end
end
if ARGV[7] ~= '' and get(key, 'webhook_attempts') ~= tonumber(ARGV[7]) then return 0 end
redis.call('HSET', key, unpack(ARGV, 13))
index(id, old, new, get(key, 'seq'), ARGV[9], ARGV[10], ARGV[11], ARGV[12])
redis.call('INCR', prefix .. ':version')
return 1
"""
)

# ARGV: prefix, owner, lease_s, now, scan limit. Returns the claimed job's hash, or nil.
LUA_CLAIM = (
    LUA_COMMON
    + """
local owner, lease_s, now = ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
for _, id in ipairs(redis.call('ZRANGE', prefix .. ':queued', 0, tonumber(ARGV[5]) - 1)) do
  local key = jobkey(id)
  local attempts = get(key, 'attempts') or 0
  local expires = get(key, 'expires_at')
  local overdue = attempts == 0 and expires ~= nil and expires < now
  if (get(key, 'run_at') or 0) <= now and not overdue then
    local lease = now + lease_s
    redis.call('HSET', key, 'status', '"running"', 'owner', cjson.encode(owner),
      'attempts', string.format('%d', attempts + 1), 'started_at', ARGV[4],
      'lease_until', string.format('%.17g', lease))
    redis.call('ZREM', prefix .. ':queued', id)
    redis.call('ZADD', prefix .. ':running', lease, id)
    redis.call('INCR', prefix .. ':version')
    return redis.call('HGETALL', key)
  end
end
return false
"""
)

# ARGV: prefix, owner, lease_s, now. Returns the ids the owner still holds running.
LUA_HEARTBEAT = (
    LUA_COMMON
    + """
local owner, lease = ARGV[2], tonumber(ARGV[4]) + tonumber(ARGV[3])
redis.call('ZADD', prefix .. ':workers', lease, owner)
local held = {}
for _, id in ipairs(redis.call('ZRANGE', prefix .. ':running', 0, -1)) do
  local key = jobkey(id)
  if get(key, 'owner') == owner then
    redis.call('HSET', key, 'lease_until', string.format('%.17g', lease))
    redis.call('ZADD', prefix .. ':running', lease, id)
    table.insert(held, id)
  end
end
return held
"""
)

# ARGV: prefix, before, limit. Drops finished jobs (not those with a webhook still due).
LUA_FORGET = (
    LUA_COMMON
    + """
local dropped = 0
local ids = redis.call('ZRANGEBYSCORE', prefix .. ':finished', '-inf', '(' .. ARGV[2], 'LIMIT', 0, tonumber(ARGV[3]))
for _, id in ipairs(ids) do
  local key = jobkey(id)
  if get(key, 'webhook_state') ~= 'pending' then
    local idem = get(key, 'idempotency_key')
    if idem then redis.call('DEL', prefix .. ':idem:' .. idem) end
    local status = get(key, 'status')
    if status then redis.call('HINCRBY', prefix .. ':counts', status, -1) end
    redis.call('DEL', key)
    redis.call('ZREM', prefix .. ':finished', id)
    dropped = dropped + 1
  end
end
redis.call('ZREMRANGEBYSCORE', prefix .. ':workers', '-inf', '(' .. ARGV[2])
if dropped > 0 then redis.call('INCRBY', prefix .. ':version', dropped) end
return dropped
"""
)

# ARGV: prefix, id. Returns {jobs ahead, their chars summed}, or nil if the job is not queued.
LUA_AHEAD = (
    LUA_COMMON
    + """
local queued = prefix .. ':queued'
local rank = redis.call('ZRANK', queued, ARGV[2])
if not rank then return false end
local chars = 0
if rank > 0 then
  for _, id in ipairs(redis.call('ZRANGE', queued, 0, rank - 1)) do
    chars = chars + num(redis.call('HGET', jobkey(id), 'chars'))
  end
end
return {rank, chars}
"""
)


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
        self._add = self._redis.register_script(LUA_ADD)
        self._replace = self._redis.register_script(LUA_REPLACE)
        self._claim = self._redis.register_script(LUA_CLAIM)
        self._heartbeat = self._redis.register_script(LUA_HEARTBEAT)
        self._forget = self._redis.register_script(LUA_FORGET)
        self._ahead = self._redis.register_script(LUA_AHEAD)

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

    async def position(self, job_id: str) -> int | None:
        rank: Any = await self._redis.zrank(self._key("queued"), job_id)
        return None if rank is None else int(rank)

    async def ahead(self, job_id: str) -> Ahead | None:
        found = await self._ahead(args=[self.prefix, job_id])
        return Ahead(int(found[0]), int(found[1])) if found else None

    async def queued_count(self) -> int:
        return int(await self._redis.zcard(self._key("queued")))

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
