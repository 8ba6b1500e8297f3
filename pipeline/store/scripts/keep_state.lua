-- KeepState: set one key of the run's plugin state at once, outside the
-- step's commit, while the caller infers the step, if the key still holds
-- what the caller read; and append the event that tells of it. The first
-- writer wins: a later one (a step redelivered, or taken over) gets what is
-- kept and writes nothing.
-- KEYS: 1 run hash, 2 plugin state hash, 3 events stream
-- ARGV[1]: {step, owner, running, inferring (the step the caller holds, as
--           lib.lua's step_refusal checks it), key, expect (the value the
--           caller read; "" for none), value, event (the entry to append)}
-- Returns {1, value} when written, {0, what the key holds} when not.
local run_key, state_key, events_key = KEYS[1], KEYS[2], KEYS[3]
local a = cjson.decode(ARGV[1])
local refusal = step_refusal(run_key, a)
if refusal then
  return refusal
end
local now = redis.call('HGET', state_key, a.key) or ''
if now ~= a.expect then
  return {0, now}
end
redis.call('HSET', state_key, a.key, a.value)
emit(events_key, a.event)
return {1, a.value}
