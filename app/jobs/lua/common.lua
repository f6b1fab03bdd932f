-- Prepended to every script: ARGV[1] is the key prefix; each field of a job hash is JSON.
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
