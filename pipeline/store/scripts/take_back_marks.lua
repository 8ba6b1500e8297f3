-- TakeBackMarks: take back outbox marks a worker wrote before a publish
-- that may not have happened. A field is emptied only while it still holds
-- the mark being taken back: a newer mark (the call was published and
-- marked since, or moved on) stays.
-- KEYS: 1 run hash
-- ARGV[1]: {marks: [{part (of the run: 'call:<id>'), field, value (the
--   mark to take back)}]}
-- Returns how many marks were taken back.
local run_key = KEYS[1]
local a = cjson.decode(ARGV[1])
local n = 0
for _, m in ipairs(a.marks) do
  local key = part(run_key, m.part)
  if redis.call('HGET', key, m.field) == m.value then
    redis.call('HSET', key, m.field, '')
    n = n + 1
  end
end
return n
