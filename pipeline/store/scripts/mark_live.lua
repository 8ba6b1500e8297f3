-- MarkLive: make a run's later steps infer live (a person decided one of
-- its calls): its field inference is set to Go's mode, if the run is there,
-- has not ended, and the agent holding it (holder, else agent) is one of
-- Go's agents (those whose model has a batch mode).
-- KEYS: 1 run hash
-- ARGV[1]: {agents (names), done (the final status), mode (the mode to set)}
-- Returns 1 when it set the mode, 0 when not.
local run_key = KEYS[1]
local a = cjson.decode(ARGV[1])
local r = redis.call('HMGET', run_key, 'status', 'holder', 'agent')
if not r[1] or r[1] == a.done then
  return 0
end
local holder = r[2] or r[3]
if holder == '' then
  holder = r[3]
end
for _, name in ipairs(a.agents) do
  if name == holder then
    redis.call('HSET', run_key, 'inference', a.mode)
    return 1
  end
end
return 0
