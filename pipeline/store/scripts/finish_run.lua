-- FinishRun: end a run that is not done yet (errors, cancel); its keys
-- expire after the retention (lib.lua).
-- KEYS: 1 run hash, 2 events stream
-- ARGV: 1 now (ms), 2 reason, 3 code, 4 detail, 5 and 6 run.finished event
--       JSON before and after its step, 7 statuses that may move to done
--       (",created,running,waiting,")
-- Returns the run hash.
local run = redis.call('HMGET', KEYS[1], 'status', 'step', 'term_reason')
local status = run[1]
if not status then
  return redis.error_reply('NOT_FOUND run')
end
if not string.find(ARGV[7], ',' .. status .. ',', 1, true) then
  return redis.error_reply('STALE run is already ' .. status .. ' (' .. (run[3] or '') .. ')')
end
redis.call('HSET', KEYS[1], 'status', 'done', unpack(termination(ARGV[2], ARGV[3], ARGV[4], ARGV[1])))
redis.call('XADD', KEYS[2], '*', 'e', ARGV[5] .. run[2] .. ARGV[6])
retire(KEYS[1])
return redis.call('HGETALL', KEYS[1])
