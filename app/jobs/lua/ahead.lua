-- ARGV: prefix, id. Returns {jobs ahead, their chars summed}, or nil if the job is not queued.
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
