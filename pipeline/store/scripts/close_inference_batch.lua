-- CloseInferenceBatch: when a model's open batch is full (max_requests
-- requests, or max_bytes of them) or its oldest request has waited
-- max_wait, move its requests, up to those bounds, into a new job in the
-- state Go names, and list the job among the model's unfinished ones.
-- Requests left over keep their wait: the next call closes them.
-- KEYS: 1 open batch (hash custom_id → line), 2 its oldest request's time
--       (ms), 3 the unfinished jobs (zset by closing time), 4 the new
--       job's record, 5 the new job's requests
-- ARGV[1]: {job (its id), state, max_requests, max_bytes, due (ms: a batch
--           whose oldest request came at or before it has waited long
--           enough), now (ms)}
-- Returns the number of requests the job took (0: no job).
local open_key, since_key, jobs_key, job_key, lines_key = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local a = cjson.decode(ARGV[1])
local n = redis.call('HLEN', open_key)
if n == 0 then
  return 0
end
local since = tonumber(redis.call('GET', since_key) or a.now)
if n < a.max_requests and since > a.due then
  local bytes = 0
  for _, v in ipairs(redis.call('HVALS', open_key)) do
    bytes = bytes + #v
  end
  if bytes < a.max_bytes then
    return 0
  end
end
local all = redis.call('HGETALL', open_key)
local taken, bytes, moved = 0, 0, {}
for i = 1, #all, 2 do
  local line = all[i + 1]
  if taken >= a.max_requests or (taken > 0 and bytes + #line + 1 > a.max_bytes) then
    break
  end
  taken, bytes = taken + 1, bytes + #line + 1
  moved[#moved + 1], moved[#moved + 2] = all[i], line
end
for i = 1, #moved, 1000 do
  redis.call('HSET', lines_key, unpack(moved, i, math.min(i + 999, #moved)))
end
for i = 1, #moved, 2 do
  redis.call('HDEL', open_key, moved[i])
end
redis.call('HSET', job_key, 'state', a.state, 'closed_at', a.now, 'requests', taken)
redis.call('ZADD', jobs_key, a.now, a.job)
if redis.call('HLEN', open_key) == 0 then
  redis.call('DEL', since_key)
end
return taken
