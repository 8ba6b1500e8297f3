-- FinishCall: record the outcome of a running call the caller holds; a
-- suspended outcome also writes the call's parking.
-- KEYS: 1 call hash, 2 events stream, 3 run hash
-- ARGV: 1 owner, 2 now (ms), 3 status, 4 result JSON, 5 error,
--       6-7 tool_call.finished event JSON around the call's step,
--       8 tool_call.suspended event JSON ("" unless suspended), 9 the
--       arguments the parking's args_hash was computed from (checked when
--       suspended), 10 terminal call statuses (",succeeded,...,"; "": no
--       view), 11 the most bytes a view's strings may add up to, 12 the
--       most calls a step with a view may have, 13.. parking HSET
--       arguments
-- Returns {call hash, fan in, step, view}: the call hash only for a parked
-- call ({} otherwise: the caller knows what it wrote, and a result can be
-- big); fan in is 0 when other calls of the step, which runs them in
-- parallel, are still in flight (the run's `open` count, commit_step.lua):
-- the last of them to finish fans in. A parked call always fans in (a held
-- decision may wait for it). The view is what the fan-in needs to end the
-- step, the run hash, the call ids and every call's hash, when that is all
-- it needs: the call fans in with a terminal outcome, the step is the
-- running run's committed one, every call of it is terminal, and no
-- decision is held for the run nor any outcome waiting in its outbox; ''
-- otherwise. "RETRY" when the arguments changed since the caller read
-- them.
local call = redis.call('HMGET', KEYS[1], 'status', 'lease_owner', 'args', 'step')
if not call[1] then
  return redis.error_reply('NOT_FOUND call')
end
if call[1] ~= 'running' then
  return redis.error_reply('STALE call is ' .. call[1])
end
if call[2] ~= ARGV[1] then
  return redis.error_reply('LEASE_LOST call is held by ' .. (call[2] or ''))
end
if ARGV[8] ~= '' and (call[3] or '') ~= ARGV[9] then
  return redis.error_reply('RETRY call arguments changed')
end
redis.call('HSET', KEYS[1], 'status', ARGV[3], 'result', ARGV[4], 'error', ARGV[5], 'lease_owner', '',
  'lease_until', '0', 'updated_at', ARGV[2])
if #ARGV > 12 then
  redis.call('HSET', KEYS[1], unpack(ARGV, 13, #ARGV))
end
redis.call('XADD', KEYS[2], '*', 'e', ARGV[6] .. call[4] .. ARGV[7])
if ARGV[8] ~= '' then
  redis.call('XADD', KEYS[2], '*', 'e', ARGV[8])
end
local fanin = 1
local run = redis.call('HMGET', KEYS[3], 'step', 'open', 'status', 'step_state')
if run[2] and tonumber(run[1]) == tonumber(call[4]) then
  local open = redis.call('HINCRBY', KEYS[3], 'open', -1)
  if open > 0 and ARGV[3] ~= 'suspended' then
    fanin = 0
  end
end
if ARGV[3] == 'suspended' then
  return {redis.call('HGETALL', KEYS[1]), fanin, call[4], ''}
end

-- The fan-in's view (see above), as the JSON ToolCallFinished carries:
-- {"run":[field, value, ...],"ids":[...],"calls":[[field, value, ...], ...]}
-- (store/view.go), or '' when there is none, the step has more than
-- ARGV[12] calls or the strings add up to more than ARGV[11] bytes. The
-- step list, the calls, the held decisions and the outbox share the run's
-- hash tag, so its slot. The step's width is checked first and then its
-- calls, from the last (in a sequential step the ones not yet run are at
-- the end): a step that has no view is told after a read or two.
local function view()
  if fanin == 0 or ARGV[10] == '' or run[3] ~= 'running' or run[4] ~= 'tools'
      or tonumber(run[1]) ~= tonumber(call[4]) then
    return ''
  end
  local base = string.sub(KEYS[3], 1, -4)
  local ids = redis.call('LRANGE', base .. 'step:' .. call[4], 0, -1)
  if #ids > tonumber(ARGV[12]) then
    return ''
  end
  local calls = {}
  local size, limit = 0, tonumber(ARGV[11])
  for i = #ids, 1, -1 do
    local h = redis.call('HGETALL', base .. 'call:' .. ids[i])
    local status = ''
    for j = 1, #h, 2 do
      if h[j] == 'status' then
        status = h[j + 1]
      end
      size = size + #h[j] + #h[j + 1]
    end
    if size > limit or not string.find(ARGV[10], ',' .. status .. ',', 1, true) then
      return ''
    end
    calls[i] = h
  end
  if redis.call('EXISTS', base .. 'held', base .. 'outcomes') > 0 then
    return ''
  end
  local runh = redis.call('HGETALL', KEYS[3])
  for j = 1, #runh do
    size = size + #runh[j]
  end
  if size > limit then
    return ''
  end
  return '{"run":' .. cjson.encode(runh) .. ',"ids":' .. cjson.encode(ids) ..
    ',"calls":' .. cjson.encode(calls) .. '}'
end
return {{}, fanin, call[4], view()}
