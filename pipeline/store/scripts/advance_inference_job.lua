-- AdvanceInferenceJob: move a job from the state Go expects to the one it
-- computed, with what the provider answered (file_id, batch_id), in one
-- compare-and-set: a batcher that read the job in another state (another
-- batcher moved it meanwhile) changes nothing.
-- KEYS: 1 the job's record
-- ARGV[1]: {expect, to, fields (name → value, written with the state)}
-- Returns 1 when moved, 0 when the job was not in expect.
local job_key = KEYS[1]
local a = cjson.decode(ARGV[1])
if redis.call('HGET', job_key, 'state') ~= a.expect then
  return 0
end
redis.call('HSET', job_key, 'state', a.to)
for k, v in pairs(a.fields) do
  redis.call('HSET', job_key, k, v)
end
return 1
