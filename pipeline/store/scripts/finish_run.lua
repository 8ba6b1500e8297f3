-- FinishRun: end a run that is not done yet (errors, cancel); its keys
-- expire after the retention (lib.lua). The approval requests of the calls
-- of its step still parked close (lib.lua's close_parked).
-- KEYS: 1 run hash, 2 events stream; the step's list is part(run hash,
--       'step:<step>')
-- ARGV[1]: {now (ms), reason, code, detail (the termination), from (the
--           run statuses that may end), to (the status an ended run has),
--           event (the run.finished entry, whose step the script sets),
--           close (close_parked's)}
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
close_parked(run_key, redis.call('LRANGE', part(run_key, 'step:' .. r[2]), 0, -1), a.close)
retire(run_key)
return redis.call('HGETALL', run_key)
