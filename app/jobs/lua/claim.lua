-- ARGV: prefix, owner, lease_s, now, scan limit. Returns the claimed job's hash, or nil.
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
