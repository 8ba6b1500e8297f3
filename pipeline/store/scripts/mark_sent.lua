-- MarkSent: record on a run's hashes (its own, its calls') that the message
-- their state asks for is published (the outbox marks step_sent and sent,
-- and published). A hash that no longer exists is left alone, so a late
-- mark never recreates a run.
-- KEYS: 1 run hash
-- ARGV[1]: {marks: [{part (of the run: 'run', 'call:<id>'), field, value}]}
-- Returns the number of hashes marked.
local run_key = KEYS[1]
local a = cjson.decode(ARGV[1])
local n = 0
for _, m in ipairs(a.marks) do
  local key = part(run_key, m.part)
  if redis.call('EXISTS', key) == 1 then
    redis.call('HSET', key, m.field, m.value)
    n = n + 1
  end
end
return n
