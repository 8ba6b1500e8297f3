-- RescheduleIf: move a run's sweep time, or take the run off the schedule,
-- only if its sweep time is still the one the caller read. A run that went
-- from waiting back to running has been rescheduled by whoever moved it, so
-- a reconcile that read it waiting cannot push it off the schedule.
-- KEYS: 1 active zset
-- ARGV[1]: {run (its id), read (the score read; nil when it was not
--   scheduled), next (the new score; nil takes it off)}
-- Returns 1 when it changed the schedule, 0 when the score had moved.
local active_key = KEYS[1]
local a = cjson.decode(ARGV[1])
local cur = redis.call('ZSCORE', active_key, a.run)
if cur then
  if not a.read or tonumber(cur) ~= a.read then
    return 0
  end
elseif a.read then
  return 0
end
if a.next then
  redis.call('ZADD', active_key, a.next, a.run)
else
  redis.call('ZREM', active_key, a.run)
end
return 1
