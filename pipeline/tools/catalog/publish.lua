-- Publish: write tool specs into the catalog hash, and extend the hash's
-- expiry to at least ttl, never shortening what a publisher with a longer
-- TTL set.
-- KEYS: 1 the catalog hash
-- ARGV[1]: {ttl (ms), specs: {tool name: its spec's JSON}}
-- Returns 1.
local catalog_key = KEYS[1]
local a = cjson.decode(ARGV[1])
local fields = {}
for name, spec in pairs(a.specs) do
  fields[#fields + 1] = name
  fields[#fields + 1] = spec
end
redis.call('HSET', catalog_key, unpack(fields))
if redis.call('PTTL', catalog_key) < a.ttl then
  redis.call('PEXPIRE', catalog_key, a.ttl)
end
return 1
