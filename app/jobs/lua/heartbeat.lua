-- ARGV: prefix, owner, lease_s, now. Returns the ids the owner still holds running.
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
