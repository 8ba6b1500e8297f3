-- CommitStep: append the assistant turn, create its tool calls in the state
-- ToolGate decided (new, suspended or terminal) and move the step to tools,
-- if the caller still holds the step. The step's streamed deltas leave the
-- event stream: the assistant message holds their text (lib.lua).
-- KEYS: 1 run hash, 2 events stream, 3 messages list, 4 step list,
--       5.. one call hash per call, in index order, then last the run's
--       plugin state hash
-- ARGV: 1 step, 2 owner, 3 now (ms), 4 run id, 5 input tokens, 6 output
--       tokens, 7 assistant message JSON, 8 the template of its
--       message.assistant event, which names its index in the messages
--       list, cut by a NUL byte where the index goes (ADR 0036),
--       9 cost in millionths of a USD (0: none), 10 the call statuses that
--       are in flight (",new,..."; "" when the step runs its calls one at
--       a time: then every finished call fans in, as the only call of a
--       step does), then per call, in index
--       order: id, n, n HSET arguments (the whole call hash), m, m event
--       JSON (tool_call.created and what follows it), then k state updates as key, value pairs ("" deletes) and last k
-- Returns {run hash} as the commit leaves it; the calls are as the caller
-- wrote them.
local run, at = read_hash(KEYS[1])
local status, step, state, owner = run[at.status], run[at.step], run[at.step_state], run[at.lease_owner]
if not status then
  return redis.error_reply('NOT_FOUND run')
end
if tonumber(step) ~= tonumber(ARGV[1]) then
  return redis.error_reply('STALE run is at step ' .. step)
end
if state == 'tools' then
  return redis.error_reply('STALE step ' .. step .. ' is already committed')
end
if status ~= 'running' then
  return redis.error_reply('STALE run is ' .. status)
end
if state ~= 'inferring' then
  return redis.error_reply('STALE step ' .. step .. ' is ' .. state .. ', not inferring')
end
if owner ~= ARGV[2] then
  return redis.error_reply('LEASE_LOST step ' .. step .. ' is held by ' .. (owner or ''))
end
local nstate = tonumber(ARGV[#ARGV])
local argEnd = #ARGV - 1 - 2 * nstate
local calls = {}
local a = 11
while a <= argEnd do
  local n = tonumber(ARGV[a + 1])
  local m = tonumber(ARGV[a + 2 + n])
  calls[#calls + 1] = {id = ARGV[a], fields = a + 2, nfields = n, events = a + 3 + n, nevents = m}
  a = a + 3 + n + m
end
if #calls ~= #KEYS - 5 then
  return redis.error_reply('ERR commit_step: ' .. #calls .. ' calls for ' .. (#KEYS - 5) .. ' keys')
end
-- One EXISTS for every call (it counts the keys that exist; a thousand at
-- a time, unpack's limit being a few thousand values); which one, only when
-- one does.
local taken = 0
for i = 5, 4 + #calls, 1000 do
  taken = taken + redis.call('EXISTS', unpack(KEYS, i, math.min(i + 999, 4 + #calls)))
end
if taken > 0 then
  for i, c in ipairs(calls) do
    if redis.call('EXISTS', KEYS[4 + i]) == 1 then
      return redis.error_reply('CONFLICT call ' .. c.id .. ' already has a record')
    end
  end
end
-- The message's event says where the message is (incall.go): its
-- template is cut by a NUL byte where the index goes, found before anything
-- is written. (A plain find: a pattern would try each of the event's bytes
-- in Lua's matcher.)
local cut = string.find(ARGV[8], '\0', 1, true)
if not cut then
  return redis.error_reply('ERR commit_step: the message.assistant template has no NUL where its index goes')
end
local nmsgs = redis.call('RPUSH', KEYS[3], ARGV[7])
-- The run's fields the commit writes, its totals and open count included,
-- in one HSET.
local set = {'step_state', 'tools', 'lease_owner', '', 'lease_until', '0', 'updated_at', ARGV[3],
  'in_tok', (tonumber(run[at.in_tok]) or 0) + tonumber(ARGV[5]),
  'out_tok', (tonumber(run[at.out_tok]) or 0) + tonumber(ARGV[6])}
if ARGV[9] ~= '0' then
  set[#set + 1], set[#set + 2] = 'cost', (tonumber(run[at.cost]) or 0) + tonumber(ARGV[9])
end
-- open: how many calls of a step that runs them in parallel are in flight
-- (finish_call counts down, a resume counts up); the call that brings it
-- to 0 fans in, and the others need not. A step of one call needs no
-- count, as a sequential one: its call always fans in, so its finish need
-- not write one. A count an earlier step left goes.
if ARGV[10] == '' or #calls < 2 then
  if run[at.open] then
    redis.call('HDEL', KEYS[1], 'open')
    patch(run, at, {'open', false})
  end
else
  local open = 0
  for _, c in ipairs(calls) do
    for j = c.fields, c.fields + c.nfields - 1, 2 do
      if ARGV[j] == 'status' and string.find(ARGV[10], ',' .. ARGV[j + 1] .. ',', 1, true) then
        open = open + 1
      end
    end
  end
  set[#set + 1], set[#set + 2] = 'open', open
end
redis.call('HSET', KEYS[1], unpack(set))
patch(run, at, set)
redis.call('XADD', KEYS[2], '*', 'e', string.sub(ARGV[8], 1, cut - 1) .. (nmsgs - 1) .. string.sub(ARGV[8], cut + 1))
trim_deltas(KEYS[1], KEYS[2], run[at.delta_from])
patch(run, at, {'delta_from', false})
set_state(KEYS[#KEYS], argEnd + 1, #ARGV - 1)
local ids = {}
for i, c in ipairs(calls) do
  redis.call('HSET', KEYS[4 + i], unpack(ARGV, c.fields, c.fields + c.nfields - 1))
  ids[i] = c.id
  for j = c.events, c.events + c.nevents - 1 do
    redis.call('XADD', KEYS[2], '*', 'e', ARGV[j])
  end
end
rpush(KEYS[4], ids, 1, #ids)
return {run}
