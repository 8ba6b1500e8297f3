-- FinishCall: record the outcome of a running call the caller holds; a
-- suspended outcome also writes the call's parking. GateCall: the same for
-- a call ToolGate judged again before it ran (expect new, no owner), with
-- its gate, and the calls a block cancels.
-- KEYS: 1 call hash, 2 events stream, 3 run hash
-- ARGV[1]: {owner, now (ms), expect (the status of a call under a lease:
--   running), to (the outcome's status, Go checked the move), result (JSON;
--   "" none), error, in_flight (the statuses of a call in flight), event
--   (the tool_call.finished entry; the script sets its step), parked
--   (absent unless suspended: {event (the tool_call.suspended entry; the
--   script sets its step), args (the arguments the parking's args_hash was
--   computed from: the call's must still be these), fields (the parking's
--   field, value pairs), ask (its approval request, lib.lua's
--   ask_approval; absent for a parking that asks nobody)}), state (plugin
--   state updates, {key, value}; "" deletes: the run's plugin state hash is
--   part(run hash, 'state')), failed (action.failed entries; the script
--   sets their step), gate (absent but for GateCall: {gate (the call's
--   gate), cancel {expect (the status of a call not run yet), to
--   (cancelled), error, calls ({id, event (its tool_call.finished entry;
--   the script sets its step)}, the calls to cancel while they are still
--   expect)}})}
-- Returns {call hash, fan in, step}: the call hash, as the script leaves
-- it, only for a parked call ({} otherwise: the caller knows what it
-- wrote, and a result can be big); fan in is 0 while other calls of the
-- step, which runs them in parallel, are in flight (lib.lua's move_open):
-- the last of them to finish fans in, and reads the step for it. A parked
-- call always fans in (a held decision may wait for it). "RETRY" when the
-- arguments changed since the caller read them.
local call_key, events_key, run_key = KEYS[1], KEYS[2], KEYS[3]
local a = cjson.decode(ARGV[1])
local call = read_fields(call_key)
local status, step = call.status, call.step
if not status then
  return redis.error_reply('NOT_FOUND call')
end
if status ~= a.expect then
  return redis.error_reply('STALE call is ' .. status)
end
if (call.lease_owner or '') ~= a.owner then
  return redis.error_reply('LEASE_LOST call is held by ' .. (call.lease_owner or ''))
end
local parked = a.parked
if parked and (call.args or '') ~= parked.args then
  return redis.error_reply('RETRY call arguments changed')
end
local set = {'status', a.to, 'result', a.result, 'error', a.error, 'lease_owner', '', 'lease_until', '0',
  'updated_at', a.now}
-- The mark of the request that started the call (outbox.go) is read for a
-- call in flight only: emptied, it leaves the hash 30 bytes lighter for
-- the retention.
if (call.sent or '') ~= '' then
  set[#set + 1] = 'sent'
  set[#set + 1] = ''
end
if a.gate then
  set[#set + 1] = 'gate'
  set[#set + 1] = a.gate.gate
end
redis.call('HSET', call_key, unpack(set))
set_fields(call, set)
-- A call parked again keeps the parking it had in parked_before (a list of
-- its parkings' field, value lists, oldest first): the tool_call.suspended
-- event of each parking names its ticket and finds the rest in the call
-- (incall.go). The parking's fields are those the new one is written with.
if parked and (call.ticket or '') ~= '' then
  local before = call.parked_before and cjson.decode(call.parked_before) or {}
  local p = {}
  for i = 1, #parked.fields, 2 do
    local f = parked.fields[i]
    if call[f] then
      p[#p + 1] = f
      p[#p + 1] = call[f]
    end
  end
  before[#before + 1] = p
  local kept = cjson.encode(before)
  redis.call('HSET', call_key, 'parked_before', kept)
  set_fields(call, {'parked_before', kept})
end
if parked then
  redis.call('HSET', call_key, unpack(parked.fields))
  set_fields(call, parked.fields)
end
a.event.step = step
emit(events_key, a.event)
put_state(part(run_key, 'state'), a.state)
emit_failed(events_key, a.failed, step)
if a.gate then
  local c = a.gate.cancel
  for _, later in ipairs(c.calls) do
    local key = part(run_key, 'call:' .. later.id)
    if redis.call('HGET', key, 'status') == c.expect then
      redis.call('HSET', key, 'status', c.to, 'error', c.error, 'updated_at', a.now)
      later.event.step = step
      emit(events_key, later.event)
    end
  end
end
if parked then
  parked.event.step = step
  emit(events_key, parked.event)
  if parked.ask then
    ask_approval(run_key, parked.ask)
  end
end
local open = move_open(run_key, step, status, a.to, set_of(a.in_flight))
if parked then
  return {fields_reply(call), 1, step}
end
if open and open > 0 then
  return {{}, 0, step}
end
return {{}, 1, step}
