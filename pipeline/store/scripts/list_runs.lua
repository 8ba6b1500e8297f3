-- ListRuns page of a run index, newest first, strictly after a cursor
-- entry (score, member) in that order (equal scores by member, descending,
-- as Redis orders them). The position is found by the cursor's rank at the
-- time of the read, so runs created meanwhile shift nothing; a cursor whose
-- member left the index (trimmed, or dropped by the page before) continues
-- with the members of its score that come after it, then below its score.
-- KEYS: 1 run index (zset)
-- ARGV: 1 cursor score ("" for the first page), 2 cursor member, 3 count
-- Returns member, score, member, score, ...
local count = tonumber(ARGV[3])
if ARGV[2] == '' then
  return redis.call('ZREVRANGE', KEYS[1], 0, count - 1, 'WITHSCORES')
end
local rank = redis.call('ZREVRANK', KEYS[1], ARGV[2])
if rank then
  return redis.call('ZREVRANGE', KEYS[1], rank + 1, rank + count, 'WITHSCORES')
end
-- before reports whether a sorts before b byte by byte, as Redis orders
-- the members of a score (Lua's < follows the locale).
local function before(a, b)
  for i = 1, math.min(#a, #b) do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then
      return x < y
    end
  end
  return #a < #b
end
local out = {}
local same = redis.call('ZREVRANGEBYSCORE', KEYS[1], ARGV[1], ARGV[1], 'WITHSCORES')
for i = 1, #same, 2 do
  if before(same[i], ARGV[2]) then
    out[#out + 1], out[#out + 2] = same[i], same[i + 1]
    if #out == 2 * count then
      return out
    end
  end
end
local rest = redis.call('ZREVRANGEBYSCORE', KEYS[1], '(' .. ARGV[1], '-inf', 'WITHSCORES', 'LIMIT', 0, count - #out / 2)
for _, v in ipairs(rest) do
  out[#out + 1] = v
end
return out
