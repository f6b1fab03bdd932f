-- ARGV: prefix, id, idempotency key or '', max queued or '', status, lease_until, finished_at,
-- webhook_state, webhook_next_at, then field/value pairs.
-- Returns {1, seq, jobs queued or running before it}, {0, id holding the key} or {2, jobs queued}
-- when the queue is full.
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
