-- Acquire: take a slot of a model's limits for a holder.
-- KEYS: 1 slots (ZSET holder -> lease end ms), 2 the tenant's slots (ZSET),
--       3 rate (GCRA theoretical arrival time, ms), 4 tokens this minute,
--       5 tokens last minute, 6 cooldown (until ms), 7 waiters (ZSET
--       waiter -> since ms), 8 the batch's slots (ZSET)
-- ARGV[1]: {now (ms), holder, lease_end (ms), concurrency, tenant_slots,
--   rpm, tpm (each 0: none), elapsed (ms in this minute), waiter (queued
--   when refused for a slot; "" for none), batch_slots (0: none)}
-- Returns {1} when granted, {0, retry after ms (-1: when a slot frees),
-- reason} when not.
local slots_key, tenant_key, rate_key, tokens_key, last_tokens_key = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local cooldown_key, waiters_key, batch_key = KEYS[6], KEYS[7], KEYS[8]
local a = cjson.decode(ARGV[1])
local now = a.now
local holder, lease_end = a.holder, a.lease_end
local cool = tonumber(redis.call('GET', cooldown_key) or '0')
if cool > now then
  return {0, cool - now, 'the provider asked to wait (429)'}
end
redis.call('ZREMRANGEBYSCORE', slots_key, '-inf', now)
redis.call('ZREMRANGEBYSCORE', tenant_key, '-inf', now)
redis.call('ZREMRANGEBYSCORE', batch_key, '-inf', now)
if redis.call('ZSCORE', slots_key, holder) then
  redis.call('ZADD', slots_key, lease_end, holder)
  redis.call('ZADD', tenant_key, lease_end, holder)
  redis.call('ZADD', batch_key, lease_end, holder)
  return {1}
end
local function wait(reason)
  if a.waiter ~= '' then
    redis.call('ZADD', waiters_key, 'NX', now, a.waiter)
    redis.call('PEXPIRE', waiters_key, 3600000)
  end
  return {0, -1, reason}
end
local conc = a.concurrency
if conc > 0 and redis.call('ZCARD', slots_key) >= conc then
  return wait('concurrency ' .. conc)
end
local share = a.tenant_slots
if share > 0 and redis.call('ZCARD', tenant_key) >= share then
  return wait('the tenant\'s share, ' .. share .. ' of ' .. conc)
end
local bshare = a.batch_slots
if bshare > 0 and redis.call('ZCARD', batch_key) >= bshare then
  return wait('the batch\'s share, ' .. bshare .. ' of ' .. conc)
end
local tpm = a.tpm
if tpm > 0 then
  local elapsed = a.elapsed
  local used = tonumber(redis.call('GET', tokens_key) or '0') +
    tonumber(redis.call('GET', last_tokens_key) or '0') * (60000 - elapsed) / 60000
  if used >= tpm then
    return {0, 60000 - elapsed, 'tokens per minute ' .. tpm}
  end
end
local rpm = a.rpm
if rpm > 0 then
  local interval = 60000 / rpm
  local tat = math.max(tonumber(redis.call('GET', rate_key) or '0'), now)
  local ahead = tat - now - (60000 - interval)
  if ahead > 0 then
    return {0, math.ceil(ahead), 'requests per minute ' .. rpm}
  end
  redis.call('SET', rate_key, tostring(tat + interval), 'PX', 120000)
end
for _, k in ipairs({slots_key, tenant_key, batch_key}) do
  redis.call('ZADD', k, lease_end, holder)
  redis.call('PEXPIRE', k, lease_end - now + 60000)
end
if a.waiter ~= '' then
  redis.call('ZREM', waiters_key, a.waiter)
end
return {1}
