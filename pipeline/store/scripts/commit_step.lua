-- CommitStep: append the assistant turn, create its tool calls in the state
-- ToolGate decided (new, suspended or terminal) and move the step to the
-- state Go computed, if the caller still holds the step. The step's
-- streamed deltas leave the event stream: the assistant message holds
-- their text (lib.lua's trim_deltas). A step that hands the run to
-- another agent gives the run to it here, with the commit.
-- KEYS: 1 run hash, 2 events stream, 3 messages list, 4 step list, 5 the
--       run's plugin state hash; each call's hash is part(run hash,
--       'call:<id>')
-- ARGV[1]: {step, owner, now (ms),
--           running, inferring (the run's status and step's state Go
--           expects), to (the step state Go moves the step to),
--           in_tok, out_tok, cost (in millionths of a USD; 0: none),
--           message (the assistant message's JSON), assistant (its
--           message.assistant entry, whose data, the message's index, the
--           script sets), delta (the type of the events trim_deltas
--           deletes),
--           in_flight (the call statuses the step's open count counts;
--           empty when the step needs no count),
--           calls (in index order: {id, status, fields (the whole call
--           hash as HSET arguments), events (its tool_call.created entry
--           and what follows it), ask (a parked call's approval request,
--           lib.lua's ask_approval; absent for the others)}),
--           state (the plugin state updates: {key, value}, "" deletes),
--           failed (the action.failed entries of the step's phases),
--           handoff (absent unless the step hands the run to another
--           agent: {to (the agent), version (the version of it the run
--           is pinned to, "" for none), call (the call that hands it
--           off), event (its run.handoff entry)})}
-- Returns the run hash as the commit leaves it; the calls are as the
-- caller wrote them.
local run_key, events_key, msgs_key, step_key, state_key = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local a = cjson.decode(ARGV[1])
local run = read_fields(run_key)
local status, step, state, owner = run.status, run.step, run.step_state, run.lease_owner
if not status then
  return redis.error_reply('NOT_FOUND run')
end
if tonumber(step) ~= a.step then
  return redis.error_reply('STALE run is at step ' .. step)
end
if state == a.to then
  return redis.error_reply('STALE step ' .. step .. ' is already committed')
end
if status ~= a.running then
  return redis.error_reply('STALE run is ' .. status)
end
if state ~= a.inferring then
  return redis.error_reply('STALE step ' .. step .. ' is ' .. (state or '') .. ', not ' .. a.inferring)
end
if owner ~= a.owner then
  return redis.error_reply('LEASE_LOST step ' .. step .. ' is held by ' .. (owner or ''))
end
-- One EXISTS for every call (it counts the keys that exist; a thousand at
-- a time, unpack's limit being a few thousand values); which one, only when
-- one does.
local keys = {}
for i, c in ipairs(a.calls) do
  keys[i] = part(run_key, 'call:' .. c.id)
end
local taken = 0
for i = 1, #keys, 1000 do
  taken = taken + redis.call('EXISTS', unpack(keys, i, math.min(i + 999, #keys)))
end
if taken > 0 then
  for i, c in ipairs(a.calls) do
    if redis.call('EXISTS', keys[i]) == 1 then
      return redis.error_reply('CONFLICT call ' .. c.id .. ' already has a record')
    end
  end
end
local nmsgs = redis.call('RPUSH', msgs_key, a.message)
-- The run's fields the commit writes, its totals and open count included,
-- in one HSET.
local set = {'step_state', a.to, 'lease_owner', '', 'lease_until', '0', 'updated_at', a.now,
  'in_tok', (tonumber(run.in_tok) or 0) + a.in_tok, 'out_tok', (tonumber(run.out_tok) or 0) + a.out_tok}
if a.cost ~= 0 then
  set[#set + 1], set[#set + 2] = 'cost', (tonumber(run.cost) or 0) + a.cost
end
-- holder: the agent the run is handed to (the run's agent until then),
-- agent_ver: the version of it the run is pinned to ("": none).
if a.handoff then
  set[#set + 1], set[#set + 2] = 'holder', a.handoff.to
  set[#set + 1], set[#set + 2] = 'agent_ver', a.handoff.version
  set[#set + 1], set[#set + 2] = 'handoffs', (tonumber(run.handoffs) or 0) + 1
  set[#set + 1], set[#set + 2] = 'handoff_call', a.handoff.call
end
-- open: how many calls of a step that runs them in parallel are in flight
-- (finish_call counts down, a resume counts up); the call that brings it
-- to 0 fans in, and the others need not. A step of one call needs no
-- count, as a sequential one: its call always fans in, so its finish need
-- not write one (Go passes no in_flight statuses then). A count an
-- earlier step left goes.
if #a.in_flight == 0 then
  if run.open then
    redis.call('HDEL', run_key, 'open')
    run.open = nil
  end
else
  local in_flight = {}
  for _, s in ipairs(a.in_flight) do
    in_flight[s] = true
  end
  local open = 0
  for _, c in ipairs(a.calls) do
    if in_flight[c.status] then
      open = open + 1
    end
  end
  set[#set + 1], set[#set + 2] = 'open', open
end
redis.call('HSET', run_key, unpack(set))
set_fields(run, set)
a.assistant.data = cjson.encode({message_at = nmsgs - 1})
emit(events_key, a.assistant)
trim_deltas(run_key, events_key, run.delta_from, a.delta)
run.delta_from = nil
put_state(state_key, a.state)
emit_failed(events_key, a.failed)
local ids = {}
for i, c in ipairs(a.calls) do
  redis.call('HSET', keys[i], unpack(c.fields))
  ids[i] = c.id
  for _, e in ipairs(c.events) do
    emit(events_key, e)
  end
  if c.ask then
    ask_approval(run_key, c.ask)
  end
end
rpush(step_key, ids, 1, #ids)
if a.handoff then
  emit(events_key, a.handoff.event)
end
return fields_reply(run)
