-- UpgradeRun: move a waiting run held by an agent to another version of
-- that agent (an operator's upgrade; the decision that wakes a run does it
-- itself, apply_decision). A run that is no longer waiting, is held by
-- another agent, or is on that version already is left as it is.
-- KEYS: 1 run hash, 2 events stream
-- ARGV[1]: {agent (the agent that must hold the run), waiting (the run
--   status it must have), version (the version it moves to), event (its
--   run.upgraded entry: the script sets its step and its data
--   {from, to})}
-- Returns 1 when it moved the run, else 0.
local run_key, events_key = KEYS[1], KEYS[2]
local a = cjson.decode(ARGV[1])
local r = redis.call('HMGET', run_key, 'status', 'agent', 'holder', 'agent_ver', 'step')
local holder = r[3]
if not holder or holder == '' then
  holder = r[2]
end
local from = r[4] or ''
if r[1] ~= a.waiting or holder ~= a.agent or from == a.version then
  return 0
end
redis.call('HSET', run_key, 'agent_ver', a.version)
a.event.step = tonumber(r[5])
a.event.data = cjson.encode({from = from, to = a.version})
emit(events_key, a.event)
return 1
