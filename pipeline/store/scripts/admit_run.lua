-- AdmitRun: admit a run requested on Kafka when the deployment has room:
-- fewer active runs than max_active (the live index: every run not yet
-- retired), fewer of its tenant's than tenant_max and, in a batch, fewer of
-- its batch's than batch_max; then list it in the three, so that it counts
-- at once. A run already listed is admitted again (a redelivered request).
-- All keys share the live index's slot ({<p>:live} tags the others).
-- KEYS: 1 live index, 2 its tenant's live index, 3 its batch's live index
--       (absent without a batch)
-- ARGV[1]: {run_id, score (its list score, created-at ms), max_active,
--           tenant_max, batch_max}
-- Returns 1 when admitted, 0 when it must wait.
local live_key, tenant_key, batch_key = KEYS[1], KEYS[2], KEYS[3]
local a = cjson.decode(ARGV[1])
local listed = redis.call('ZSCORE', live_key, a.run_id)
if not listed then
  if redis.call('ZCARD', live_key) >= a.max_active or redis.call('ZCARD', tenant_key) >= a.tenant_max then
    return 0
  end
  if batch_key and redis.call('ZCARD', batch_key) >= a.batch_max then
    return 0
  end
end
redis.call('ZADD', live_key, 'NX', a.score, a.run_id)
redis.call('ZADD', tenant_key, 'NX', a.score, a.run_id)
if batch_key then
  redis.call('ZADD', batch_key, 'NX', a.score, a.run_id)
end
return 1
