-- TakeBackMarks: take back outbox marks a worker wrote before a publish
-- that may not have happened. A field is emptied only while it still holds
-- the mark being taken back: a newer mark (the call was published and
-- marked since, or moved on) stays.
-- KEYS: the hashes. ARGV: per key, in order: field, the mark to take back.
-- Returns how many marks were taken back.
local n = 0
for i, key in ipairs(KEYS) do
  if redis.call('HGET', key, ARGV[2 * i - 1]) == ARGV[2 * i] then
    redis.call('HSET', key, ARGV[2 * i - 1], '')
    n = n + 1
  end
end
return n
