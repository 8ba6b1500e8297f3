-- MarkSent: record on run and call hashes that the message their state
-- asks for is published (the outbox marks step_sent and sent). A hash that
-- no longer exists is left alone, so a late mark never recreates a run.
-- KEYS: the hashes to mark
-- ARGV: per key, in order: field, value
-- Returns the number of hashes marked.
local n = 0
for i, key in ipairs(KEYS) do
  if redis.call('EXISTS', key) == 1 then
    redis.call('HSET', key, ARGV[2 * i - 1], ARGV[2 * i])
    n = n + 1
  end
end
return n
