-- ApplyDecision: apply, hold or reject a decision for a call; a repeated
-- decision id changes nothing. Go decides every status the script may
-- write and builds every event (decision.go); the script reads the run and
-- the call, picks among what Go gave and sets the events' step.
-- KEYS: 1 run hash, 2 call hash, 3 events stream, 4 seen decision ids set,
--       5 held decisions hash
-- ARGV[1]: {id, call (its id), now (ms),
--   why: the reason the decision's outcome (lib.lua: outcome, in the run's
--     outbox) records when it is applied ("" none),
--   held: the held entry to keep when the call has not parked yet,
--   args_hash: the parked call's arguments' hash it must match ("" none),
--   refuse: why to reject a resume ("" none: its payload fits the tool),
--   ended: the run status at which decisions are rejected,
--   wake {from, to}: the move of a run the decision wakes,
--   upgrade: the agent version the run it wakes moves to ("": it keeps
--     its own; runs.upgrade_waiting),
--   in_flight: the call statuses the step's open count counts (move_open),
--   parkable: the list of statuses of a call that may still park (held),
--   decidable: the list of statuses a decision applies to,
--   to: the call's status once decided, set: the call's fields then (the
--     decision, and an error and gate when it ends the call),
--   resume (a resume that runs the call again; nil otherwise):
--     {payload (nil none), result: the status of a call whose resume mode
--     makes the payload its result, sent: the outbox mark of the worker
--     that publishes the call (nil none)},
--   events: the entries {held, rejected (the script sets its reason),
--     applied, resumed, finished (when `to` ends the call), result (when
--     resume.result does)}}
-- A resume goes suspended -> resuming, as the table says; in
-- use_decision_as_result mode the call then completes at once, resuming ->
-- succeeded: decision.applied reports resuming, tool_call.finished
-- succeeded, and the call is stored succeeded.
-- Returns {outcome, reason, run hash, call hash}; outcome is applied,
-- held, rejected or duplicate.
local run_key, call_key, events_key, seen_key, held_key = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local a = cjson.decode(ARGV[1])
local run = redis.call('HMGET', run_key, 'status', 'step')
local rstatus = run[1]
if not rstatus then
  return redis.error_reply('NOT_FOUND run')
end
local function reply(what, reason)
  return {what, reason, redis.call('HGETALL', run_key), redis.call('HGETALL', call_key)}
end
if redis.call('SISMEMBER', seen_key, a.id) == 1 then
  return reply('duplicate', '')
end
local call = redis.call('HMGET', call_key, 'status', 'step', 'args_hash', 'resume_mode', 'args', 'orig_args')
local cstatus = call[1]
local step = call[2] or run[2]
local held = redis.call('HGET', held_key, a.call)
local mine = held and cjson.decode(held).decision_id == a.id
local function add(e)
  e.step = step
  emit(events_key, e)
end

local function reject(reason)
  redis.call('SADD', seen_key, a.id)
  inherit(run_key, seen_key) -- a run that ended may have had no decision ids
  if mine then
    redis.call('HDEL', held_key, a.call)
  end
  a.events.rejected.data = cjson.encode({decision_id = a.id, reason = reason})
  add(a.events.rejected)
  outcome(run_key, a.id, a.call, 'rejected', reason)
  return reply('rejected', reason)
end

if rstatus == a.ended then
  return reject('run is done')
end
if not cstatus or set_of(a.parkable)[cstatus] then
  local why = 'call does not exist yet'
  if cstatus then
    why = 'call is ' .. cstatus .. ', not suspended yet'
  end
  if mine then
    return reply('held', why) -- held already: a redelivery changes nothing
  end
  if held then
    return reject('another decision is already held for this call')
  end
  redis.call('HSET', held_key, a.call, a.held)
  add(a.events.held)
  outcome(run_key, a.id, a.call, 'held', why)
  return reply('held', why)
end
if not set_of(a.decidable)[cstatus] then
  return reject('call is ' .. cstatus .. ', not suspended')
end
if a.args_hash ~= '' and a.args_hash ~= (call[3] or '') then
  return reject('args_hash does not match the parked arguments')
end
if a.refuse ~= '' then
  return reject(a.refuse)
end

local to, finished, set = a.to, a.events.finished, a.set
local r = a.resume
if r then
  -- The modes are config's (ResumeUseDecisionAsResult, ResumePassDecisionToTool).
  local mode = call[4]
  if mode == 'use_decision_as_result' then
    to, finished = r.result, a.events.result -- resuming, then completed with the payload
    set.result = r.payload or 'null'
  else
    if mode == 'pass_decision_to_tool' then
      if not r.payload then
        return reject('pass_decision_to_tool needs a payload')
      end
      set.args = r.payload
      if (call[6] or '') == '' then
        set.orig_args = call[5] or ''
      end
    end
    -- a new execution, not a retry of the one that parked
    set.attempts = 0
    set.sent = r.sent
  end
end
set.status = to
local fields = {}
for f, v in pairs(set) do
  fields[#fields + 1] = f
  fields[#fields + 1] = v
end
redis.call('SADD', seen_key, a.id)
if mine then
  redis.call('HDEL', held_key, a.call)
end
redis.call('HSET', call_key, unpack(fields))
move_open(run_key, step, cstatus, to, set_of(a.in_flight)) -- a call not ended runs again: in flight
add(a.events.applied)
if rstatus == a.wake.from then
  -- A waiting run's termination is its reason alone (set_waiting.lua).
  redis.call('HSET', run_key, 'status', a.wake.to, 'term_reason', '', 'updated_at', a.now)
  if a.upgrade ~= '' then
    redis.call('HSET', run_key, 'agent_ver', a.upgrade)
  end
  a.events.resumed.step = run[2]
  emit(events_key, a.events.resumed)
end
if finished then
  add(finished)
end
outcome(run_key, a.id, a.call, 'applied', a.why)
return reply('applied', '')
