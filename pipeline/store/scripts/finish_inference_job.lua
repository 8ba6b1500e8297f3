-- FinishInferenceJob: end a job from the state Go expects, in the state it
-- computed (done, or requeued): its requests named in `requeue` go back to
-- the model's open batch (a failed batch's unanswered ones), the others
-- are dropped, and the job leaves the unfinished jobs; its record stays
-- for a day, listed among the ended jobs (those of the last day).
-- KEYS: 1 the job's record, 2 its requests, 3 the unfinished jobs, 4 the
--       open batch, 5 its oldest request's time, 6 the ended jobs (zset
--       by finishing time)
-- ARGV[1]: {job (its id), expect, to, requeue (custom_ids), keep (ms the
--           record stays), now (ms)}
-- Returns 1 when finished, 0 when the job was not in expect.
local job_key, lines_key, jobs_key, open_key, since_key, ended_key = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local a = cjson.decode(ARGV[1])
if redis.call('HGET', job_key, 'state') ~= a.expect then
  return 0
end
local back = 0
for _, id in ipairs(a.requeue) do
  local line = redis.call('HGET', lines_key, id)
  if line then
    redis.call('HSET', open_key, id, line)
    back = back + 1
  end
end
if back > 0 then
  redis.call('SET', since_key, a.now, 'NX')
end
redis.call('DEL', lines_key)
redis.call('ZREM', jobs_key, a.job)
redis.call('HSET', job_key, 'state', a.to, 'finished_at', a.now)
redis.call('PEXPIRE', job_key, a.keep)
redis.call('ZADD', ended_key, a.now, a.job)
redis.call('ZREMRANGEBYSCORE', ended_key, '-inf', '(' .. (a.now - a.keep))
return 1
