-- FinishRun: end a run that is not done yet (errors, cancel); its keys
-- expire after the retention (lib.lua).
-- KEYS: 1 run hash, 2 events stream
-- ARGV[1]: {now (ms), reason, code, detail (the termination), from (the
--           run statuses that may end), to (the status an ended run has),
--           event (the run.finished entry, whose step the script sets)}
-- Returns the run hash.
local run_key, events_key = KEYS[1], KEYS[2]
local a = cjson.decode(ARGV[1])
local r = redis.call('HMGET', run_key, 'status', 'step', 'term_reason')
local status = r[1]
if not status then
  return redis.error_reply('NOT_FOUND run')
end
local finishable = false
for _, s in ipairs(a.from) do
  finishable = finishable or s == status
end
if not finishable then
  return redis.error_reply('STALE run is already ' .. status .. ' (' .. (r[3] or '') .. ')')
end
redis.call('HSET', run_key, 'status', a.to, unpack(termination(a.reason, a.code, a.detail, a.now)))
a.event.step = r[2]
emit(events_key, a.event)
retire(run_key)
return redis.call('HGETALL', run_key)
