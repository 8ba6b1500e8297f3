-- CreateRun: write a new run, its input messages and run.created; or, when
-- the run exists, tell an idempotent replay (same request hash) from a
-- conflict.
-- KEYS: 1 run hash, 2 messages list, 3 events stream
-- ARGV: 1 request hash, 2 run.created event JSON, 3 n = number of HSET
--       arguments, 4..3+n field/value pairs, 4+n.. input message JSON
-- Returns {1, run hash} when created, {0, run hash} for a replay.
if redis.call('EXISTS', KEYS[1]) == 1 then
  local hash = redis.call('HGET', KEYS[1], 'req_hash') or ''
  if hash ~= ARGV[1] then
    return redis.error_reply('CONFLICT run exists with a different request')
  end
  return {0, redis.call('HGETALL', KEYS[1])}
end
local n = tonumber(ARGV[3])
local fields = {}
for i = 4, 3 + n do
  fields[#fields + 1] = ARGV[i]
end
redis.call('HSET', KEYS[1], unpack(fields))
for i = 4 + n, #ARGV do
  redis.call('RPUSH', KEYS[2], ARGV[i])
end
redis.call('XADD', KEYS[3], '*', 'e', ARGV[2])
return {1, redis.call('HGETALL', KEYS[1])}
