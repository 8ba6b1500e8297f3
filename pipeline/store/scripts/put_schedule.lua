-- PutSchedule: write a schedule's record if it is still at the revision
-- its writer read (0: it must not exist), counting the write in "rev".
-- KEYS: 1 schedule hash
-- ARGV[1]: {rev (the revision read), fields (HSET arguments, every field
--           of the record)}
-- Returns {1, hash} when written, {0, hash} (empty: no schedule) when the
-- record is at another revision.
local schedule_key = KEYS[1]
local a = cjson.decode(ARGV[1])
local rev = tonumber(redis.call('HGET', schedule_key, 'rev') or '0')
if rev ~= a.rev then
  return {0, redis.call('HGETALL', schedule_key)}
end
redis.call('HSET', schedule_key, 'rev', rev + 1, unpack(a.fields))
return {1, redis.call('HGETALL', schedule_key)}
