-- ApplyDecision: apply, hold or reject a decision for a call; a repeated
-- decision id changes nothing.
-- KEYS: 1 run hash, 2 call hash, 3 events stream, 4 seen decision ids set,
--       5 held decisions hash
-- ARGV: 1 decision id, 2 call id, 3 action (resume|cancel), 4 payload JSON
--       ("" none), 5 args_hash ("" none), 6 decided by, 7 reason,
--       8 timeout ("1" or "0"), 9 now (ms), 10 the held entry JSON,
--       11 its prefix that names this decision id, 12 the error of a
--       cancelled call, then events JSON around their holes:
--       13-14 decision.held (step), 15-17 decision.rejected (step, reason),
--       18-20 decision.applied (step, status), 21-22 run.resumed (step),
--       23-24 tool_call.finished (step) for a call the decision ends,
--       25 statuses a decision applies to (",suspended,"), derived from
--       the transition table, 26 why to reject a resume ("" none: its
--       payload fits the tool), 27 why ToolGate blocks a resumed call (""
--       none): the decision applies, the call fails with it, 28 the
--       worker that publishes a call left resuming right after ("" none):
--       the call is marked as being sent by it (outbox.go, beingSentMark),
--       29 the producer whose key verified the decision's signature (""
--       none: signatures are not checked), kept on the call as dec_signed
-- A resume goes suspended -> resuming, as the table says; in
-- use_decision_as_result mode the call then completes at once, resuming ->
-- succeeded: decision.applied reports resuming, tool_call.finished
-- succeeded, and the call is stored succeeded.
-- What becomes of a decision goes into the run's outbox of decision
-- outcomes (lib.lua: outcome), except for the sweeper's on_timeout
-- decisions (ARGV 8) and a duplicate, which writes nothing.
-- Returns {outcome, reason, run hash, call hash}; outcome is applied,
-- held, rejected or duplicate. Reasons are plain ASCII (they go into event
-- JSON unescaped).
local run = redis.call('HMGET', KEYS[1], 'status', 'step')
local rstatus = run[1]
if not rstatus then
  return redis.error_reply('NOT_FOUND run')
end
local function reply(outcome, reason)
  return {outcome, reason, redis.call('HGETALL', KEYS[1]), redis.call('HGETALL', KEYS[2])}
end
if redis.call('SISMEMBER', KEYS[4], ARGV[1]) == 1 then
  return reply('duplicate', '')
end
local call = redis.call('HMGET', KEYS[2], 'status', 'step', 'args_hash', 'resume_mode', 'args', 'orig_args')
local cstatus = call[1]
local step = call[2] or run[2]
local held = redis.call('HGET', KEYS[5], ARGV[2])
local mine = held and string.sub(held, 1, #ARGV[11]) == ARGV[11]

local function reject(reason)
  redis.call('SADD', KEYS[4], ARGV[1])
  inherit(KEYS[1], KEYS[4]) -- a run that ended may have had no decision ids
  if mine then
    redis.call('HDEL', KEYS[5], ARGV[2])
  end
  redis.call('XADD', KEYS[3], '*', 'e', ARGV[15] .. step .. ARGV[16] .. reason .. ARGV[17])
  if ARGV[8] ~= '1' then
    outcome(KEYS[1], ARGV[1], ARGV[2], 'rejected', reason)
  end
  return reply('rejected', reason)
end

if rstatus == 'done' then
  return reject('run is done')
end
if not cstatus or cstatus == 'new' or cstatus == 'running' then
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
  redis.call('HSET', KEYS[5], ARGV[2], ARGV[10])
  redis.call('XADD', KEYS[3], '*', 'e', ARGV[13] .. step .. ARGV[14])
  outcome(KEYS[1], ARGV[1], ARGV[2], 'held', why)
  return reply('held', why)
end
if not string.find(ARGV[25], ',' .. cstatus .. ',', 1, true) then
  return reject('call is ' .. cstatus .. ', not suspended')
end
if ARGV[5] ~= '' and ARGV[5] ~= (call[3] or '') then
  return reject('args_hash does not match the parked arguments')
end
if ARGV[3] ~= 'cancel' and ARGV[26] ~= '' then
  return reject(ARGV[26])
end

-- dec_signed is written even when empty: a call decided again (resumed,
-- parked anew, then timed out) must not keep an earlier decision's signer.
local fields = {'dec_id', ARGV[1], 'dec_action', ARGV[3], 'dec_by', ARGV[6], 'dec_reason', ARGV[7],
  'dec_timeout', ARGV[8], 'updated_at', ARGV[9], 'dec_signed', ARGV[29]}
local applied, nstatus -- the status decision.applied reports, and the one stored
if ARGV[3] == 'cancel' then
  applied, nstatus = 'cancelled', 'cancelled'
  fields[#fields + 1] = 'error'
  fields[#fields + 1] = ARGV[12]
else
  applied = 'resuming'
  local mode = call[4]
  if ARGV[27] ~= '' then
    nstatus = 'failed' -- resuming, then blocked by ToolGate: nothing runs
    fields[#fields + 1] = 'error'
    fields[#fields + 1] = ARGV[27]
    fields[#fields + 1] = 'gate'
    fields[#fields + 1] = 'block'
  elseif mode == 'use_decision_as_result' then
    nstatus = 'succeeded' -- resuming, then completed with the payload
    local result = ARGV[4]
    if result == '' then
      result = 'null'
    end
    fields[#fields + 1] = 'result'
    fields[#fields + 1] = result
  elseif mode == 'pass_decision_to_tool' then
    if ARGV[4] == '' then
      return reject('pass_decision_to_tool needs a payload')
    end
    nstatus = 'resuming'
    fields[#fields + 1] = 'args'
    fields[#fields + 1] = ARGV[4]
    if (call[6] or '') == '' then
      fields[#fields + 1] = 'orig_args'
      fields[#fields + 1] = call[5] or ''
    end
  else
    nstatus = 'resuming'
  end
  if nstatus == 'resuming' then
    -- a new execution, not a retry of the one that parked
    fields[#fields + 1] = 'attempts'
    fields[#fields + 1] = '0'
    if ARGV[28] ~= '' then
      fields[#fields + 1] = 'sent'
      fields[#fields + 1] = 'd:' .. ARGV[1] .. '@' .. ARGV[9] .. '@' .. ARGV[28]
    end
  end
end
fields[#fields + 1] = 'status'
fields[#fields + 1] = nstatus
redis.call('SADD', KEYS[4], ARGV[1])
if mine then
  redis.call('HDEL', KEYS[5], ARGV[2])
end
redis.call('HSET', KEYS[2], unpack(fields))
if nstatus == 'resuming' and redis.call('HEXISTS', KEYS[1], 'open') == 1 then
  redis.call('HINCRBY', KEYS[1], 'open', 1) -- in flight again (commit_step.lua)
end
redis.call('XADD', KEYS[3], '*', 'e', ARGV[18] .. step .. ARGV[19] .. applied .. ARGV[20])
if rstatus == 'waiting' then
  -- A waiting run's termination is its reason alone (set_waiting.lua).
  redis.call('HSET', KEYS[1], 'status', 'running', 'term_reason', '', 'updated_at', ARGV[9])
  redis.call('XADD', KEYS[3], '*', 'e', ARGV[21] .. run[2] .. ARGV[22])
end
if nstatus ~= 'resuming' then
  redis.call('XADD', KEYS[3], '*', 'e', ARGV[23] .. step .. ARGV[24])
end
if ARGV[8] ~= '1' then
  outcome(KEYS[1], ARGV[1], ARGV[2], 'applied', '')
end
return reply('applied', '')
