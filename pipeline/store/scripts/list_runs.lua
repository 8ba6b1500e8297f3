-- ListRuns page of a run index, newest first, strictly after a cursor
-- entry (score, member) in that order (equal scores by member, descending,
-- as Redis orders them). The position is found by the cursor's rank at the
-- time of the read, so runs created meanwhile shift nothing; a cursor whose
-- member left the index (trimmed, or dropped by the page before) continues
-- with the members of its score that come after it, then below its score.
-- A first page (no cursor) starts at a bound of scores, top: "+inf" for
-- the newest, "(<ms>" for those created before a time.
-- KEYS: 1 run index (zset)
-- ARGV[1]: {score, member (the cursor's; "" for a first page), top (a first
-- page's bound), count}
-- Returns member, score, member, score, ...
local index_key = KEYS[1]
local a = cjson.decode(ARGV[1])
local count = a.count
if a.member == '' then
  return redis.call('ZREVRANGEBYSCORE', index_key, a.top, '-inf', 'WITHSCORES', 'LIMIT', 0, count)
end
local rank = redis.call('ZREVRANK', index_key, a.member)
if rank then
  return redis.call('ZREVRANGE', index_key, rank + 1, rank + count, 'WITHSCORES')
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
local same = redis.call('ZREVRANGEBYSCORE', index_key, a.score, a.score, 'WITHSCORES')
for i = 1, #same, 2 do
  if before(same[i], a.member) then
    out[#out + 1], out[#out + 2] = same[i], same[i + 1]
    if #out == 2 * count then
      return out
    end
  end
end
local rest = redis.call('ZREVRANGEBYSCORE', index_key, '(' .. a.score, '-inf', 'WITHSCORES', 'LIMIT', 0, count - #out / 2)
for _, v in ipairs(rest) do
  out[#out + 1] = v
end
return out
