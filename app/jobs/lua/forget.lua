-- ARGV: prefix, before, limit. Drops finished jobs (not those with a webhook still due).
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
