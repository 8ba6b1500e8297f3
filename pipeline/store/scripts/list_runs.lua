-- ListRuns page of the run index, newest first, strictly after a cursor
-- entry (score, member) in that order. The position is found by the
-- cursor's rank at the time of the read, so runs created meanwhile shift
-- nothing; a cursor whose member left the index continues below its score.
-- KEYS: 1 runs zset
-- ARGV: 1 cursor score ("" for the first page), 2 cursor member, 3 count
-- Returns member, score, member, score, ...
local count = tonumber(ARGV[3])
if ARGV[2] == '' then
  return redis.call('ZREVRANGE', KEYS[1], 0, count - 1, 'WITHSCORES')
end
local rank = redis.call('ZREVRANK', KEYS[1], ARGV[2])
if not rank then
  return redis.call('ZREVRANGEBYSCORE', KEYS[1], '(' .. ARGV[1], '-inf', 'WITHSCORES', 'LIMIT', 0, count)
end
return redis.call('ZREVRANGE', KEYS[1], rank + 1, rank + count, 'WITHSCORES')
