-- ARGV: prefix, id, expected status, owner, attempts, lapsed_by, webhook_attempts ('' = any),
-- new status, lease_until, finished_at, webhook_state, webhook_next_at, then field/value pairs.
-- Returns 1 if written, 0 if a fence did not hold.
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
