-- CommitRunEnd: commit what the RunEnd phase of a done run left, once: its
-- plugin state updates and action.failed entries, with the mark that says
-- RunEnd has run. A run whose mark is set, or that is not done, is
-- refused.
-- KEYS: 1 run hash, 2 events stream; the plugin state hash is part(run
--       hash, 'state')
-- ARGV[1]: {done (the status of a done run), mark {key, value} (the state
--   key that marks RunEnd as run, and its value), updates (plugin state
--   updates, {key, value}; "" deletes), failed (the action.failed
--   entries; the script sets their step)}
-- Returns 1.
local run_key, events_key = KEYS[1], KEYS[2]
local a = cjson.decode(ARGV[1])
local state_key = part(run_key, 'state')
local r = redis.call('HMGET', run_key, 'status', 'step')
if not r[1] then
  return redis.error_reply('NOT_FOUND run')
end
if r[1] ~= a.done then
  return redis.error_reply('STALE run is ' .. r[1])
end
if redis.call('HEXISTS', state_key, a.mark.key) == 1 then
  return redis.error_reply('STALE RunEnd has run')
end
put_state(state_key, a.updates)
redis.call('HSET', state_key, a.mark.key, a.mark.value)
-- A done run's keys live as long as its record (lib.lua's retire): a state
-- hash made now does too.
local ttl = redis.call('PTTL', run_key)
if ttl > 0 then
  redis.call('PEXPIRE', state_key, ttl)
end
emit_failed(events_key, a.failed, r[2])
return 1
