-- Acquire: take a slot of a model's limits for a holder.
-- KEYS: 1 slots (ZSET holder -> lease end ms), 2 the tenant's slots (ZSET),
--       3 rate (GCRA theoretical arrival time, ms), 4 tokens this minute,
--       5 tokens last minute, 6 cooldown (until ms), 7 waiters (ZSET
--       waiter -> since ms), 8 the batch's slots (ZSET)
-- ARGV: 1 now ms, 2 holder, 3 lease end ms, 4 concurrency (0: none),
--       5 tenant slots (0: none), 6 rpm (0: none), 7 tpm (0: none),
--       8 ms elapsed in this minute, 9 waiter (queued when refused for a
--       slot; "" for none), 10 batch slots (0: none)
-- Returns {1} when granted, {0, retry after ms (-1: when a slot frees),
-- reason} when not.
local now = tonumber(ARGV[1])
local holder, lease_end = ARGV[2], tonumber(ARGV[3])
local cool = tonumber(redis.call('GET', KEYS[6]) or '0')
if cool > now then
  return {0, cool - now, 'the provider asked to wait (429)'}
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
redis.call('ZREMRANGEBYSCORE', KEYS[8], '-inf', now)
if redis.call('ZSCORE', KEYS[1], holder) then
  redis.call('ZADD', KEYS[1], lease_end, holder)
  redis.call('ZADD', KEYS[2], lease_end, holder)
  redis.call('ZADD', KEYS[8], lease_end, holder)
  return {1}
end
local function wait(reason)
  if ARGV[9] ~= '' then
    redis.call('ZADD', KEYS[7], 'NX', now, ARGV[9])
    redis.call('PEXPIRE', KEYS[7], 3600000)
  end
  return {0, -1, reason}
end
local conc = tonumber(ARGV[4])
if conc > 0 and redis.call('ZCARD', KEYS[1]) >= conc then
  return wait('concurrency ' .. conc)
end
local share = tonumber(ARGV[5])
if share > 0 and redis.call('ZCARD', KEYS[2]) >= share then
  return wait('the tenant\'s share, ' .. share .. ' of ' .. conc)
end
local bshare = tonumber(ARGV[10])
if bshare > 0 and redis.call('ZCARD', KEYS[8]) >= bshare then
  return wait('the batch\'s share, ' .. bshare .. ' of ' .. conc)
end
local tpm = tonumber(ARGV[7])
if tpm > 0 then
  local elapsed = tonumber(ARGV[8])
  local used = tonumber(redis.call('GET', KEYS[4]) or '0') +
    tonumber(redis.call('GET', KEYS[5]) or '0') * (60000 - elapsed) / 60000
  if used >= tpm then
    return {0, 60000 - elapsed, 'tokens per minute ' .. tpm}
  end
end
local rpm = tonumber(ARGV[6])
if rpm > 0 then
  local interval = 60000 / rpm
  local tat = math.max(tonumber(redis.call('GET', KEYS[3]) or '0'), now)
  local ahead = tat - now - (60000 - interval)
  if ahead > 0 then
    return {0, math.ceil(ahead), 'requests per minute ' .. rpm}
  end
  redis.call('SET', KEYS[3], tostring(tat + interval), 'PX', 120000)
end
for _, k in ipairs({KEYS[1], KEYS[2], KEYS[8]}) do
  redis.call('ZADD', k, lease_end, holder)
  redis.call('PEXPIRE', k, lease_end - now + 60000)
end
if ARGV[9] ~= '' then
  redis.call('ZREM', KEYS[7], ARGV[9])
end
return {1}
