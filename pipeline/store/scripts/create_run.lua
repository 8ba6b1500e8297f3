-- CreateRun: write a new run, its input messages and run.created; or, when
-- the run exists, tell an idempotent replay (same request hash) from a
-- conflict.
-- KEYS: 1 run hash, 2 messages list, 3 events stream
-- ARGV[1]: {req_hash, fields (the run hash as HSET arguments, its status
--           the one Go creates a run in), messages (the input, each
--           message's JSON), event (the run.created entry)}
-- Returns {1, run hash} when created, {0, run hash} for a replay.
local run_key, msgs_key, events_key = KEYS[1], KEYS[2], KEYS[3]
local a = cjson.decode(ARGV[1])
if redis.call('EXISTS', run_key) == 1 then
  local hash = redis.call('HGET', run_key, 'req_hash') or ''
  if hash ~= a.req_hash then
    return redis.error_reply('CONFLICT run exists with a different request')
  end
  return {0, redis.call('HGETALL', run_key)}
end
redis.call('HSET', run_key, unpack(a.fields))
rpush(msgs_key, a.messages, 1, #a.messages)
emit(events_key, a.event)
return {1, redis.call('HGETALL', run_key)}
