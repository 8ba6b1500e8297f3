-- DueRuns: hand out runs whose sweep time has come, pushing each to the
-- recheck time in the same step so a second sweeper does not take it too.
-- KEYS: 1 active zset
-- ARGV: 1 now (ms), 2 limit, 3 recheck (ms)
-- Returns the run ids.
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, ARGV[2])
for _, id in ipairs(ids) do
  redis.call('ZADD', KEYS[1], 'XX', ARGV[3], id)
end
return ids
