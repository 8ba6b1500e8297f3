-- RescheduleIf: move a run's sweep time, or take the run off the schedule,
-- only if its sweep time is still the one the caller read. A run that went
-- from waiting back to running has been rescheduled by whoever moved it, so
-- a reconcile that read it waiting cannot push it off the schedule.
-- KEYS: 1 active zset
-- ARGV: 1 run id, 2 the score read ("" when it was not scheduled), 3 the new
--       score ("" takes it off)
-- Returns 1 when it changed the schedule, 0 when the score had moved.
local cur = redis.call('ZSCORE', KEYS[1], ARGV[1])
if cur then
  if ARGV[2] == '' or tonumber(cur) ~= tonumber(ARGV[2]) then
    return 0
  end
elseif ARGV[2] ~= '' then
  return 0
end
if ARGV[3] == '' then
  redis.call('ZREM', KEYS[1], ARGV[1])
else
  redis.call('ZADD', KEYS[1], ARGV[3], ARGV[1])
end
return 1
