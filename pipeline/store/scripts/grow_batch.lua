-- GrowBatch: add a run to a batch fed from Kafka: the batch's record is
-- written once, with its tenant, and its runs are a sorted set beside it
-- (by admission time), so a batch of any size grows in O(log n). A batch
-- of another tenant is a conflict: a tenant cannot add runs to, or learn
-- the runs of, another's batch.
-- KEYS: 1 the batch's record, 2 its runs
-- ARGV[1]: {record (the record's JSON, as Go writes it), tenant, run_id,
--           score (ms), ttl_ms (0: no expiry)}
-- Returns 1.
local record_key, runs_key = KEYS[1], KEYS[2]
local a = cjson.decode(ARGV[1])
local cur = redis.call('GET', record_key)
if cur and cjson.decode(cur).tenant ~= a.tenant then
  return redis.error_reply('CONFLICT batch belongs to another tenant')
end
if not cur then
  redis.call('SET', record_key, a.record)
end
redis.call('ZADD', runs_key, 'NX', a.score, a.run_id)
if a.ttl_ms > 0 then
  redis.call('PEXPIRE', record_key, a.ttl_ms)
  redis.call('PEXPIRE', runs_key, a.ttl_ms)
end
return 1
