-- DueRuns (and DueSchedules): hand out the members of an index whose time
-- has come, pushing each to the recheck time in the same step so a second
-- sweeper does not take it too.
-- KEYS: 1 the index (the active zset of runs, or the schedules zset)
-- ARGV[1]: {now (ms), limit, recheck (ms)}
-- Returns the members (run or schedule ids).
local active_key = KEYS[1]
local a = cjson.decode(ARGV[1])
local ids = redis.call('ZRANGEBYSCORE', active_key, '-inf', a.now, 'LIMIT', 0, a.limit)
for _, id in ipairs(ids) do
  redis.call('ZADD', active_key, 'XX', a.recheck, id)
end
return ids
