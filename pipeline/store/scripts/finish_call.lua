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
-- Returns {call hash, fan in, step, view}: the call hash, as the script
-- leaves it, only for a parked call ({} otherwise: the caller knows what it
-- wrote, and a result can be big); fan in is 0 when other calls of the
-- step, which runs them in parallel, are still in flight (the run's `open`
-- count, commit_step.lua): the last of them to finish fans in. A parked
-- call always fans in (a held decision may wait for it). The view is what
-- the fan-in needs to end the step, the run hash, the call ids and every
-- call's hash, when that is all it needs: the call fans in with a terminal
-- outcome, the step is the running run's committed one, every call of it is
-- terminal, and no decision is held for the run nor any outcome waiting in
-- its outbox; '' otherwise. "RETRY" when the arguments changed since the
-- caller read them.
local call, at = read_hash(KEYS[1])
local status, step = call[at.status], call[at.step]
if not status then
  return redis.error_reply('NOT_FOUND call')
end
if status ~= 'running' then
  return redis.error_reply('STALE call is ' .. status)
end
if call[at.lease_owner] ~= ARGV[1] then
  return redis.error_reply('LEASE_LOST call is held by ' .. (call[at.lease_owner] or ''))
end
if ARGV[8] ~= '' and (call[at.args] or '') ~= ARGV[9] then
  return redis.error_reply('RETRY call arguments changed')
end
local set = {'status', ARGV[3], 'result', ARGV[4], 'error', ARGV[5], 'lease_owner', '', 'lease_until', '0',
  'updated_at', ARGV[2]}
-- The mark of the request that started the call (outbox.go) is read for a
-- new, resuming or running call only: emptied, it leaves the hash 30 bytes
-- lighter for the retention.
if (call[at.sent] or '') ~= '' then
  set[#set + 1] = 'sent'
  set[#set + 1] = ''
end
redis.call('HSET', KEYS[1], unpack(set))
patch(call, at, set)
-- A call parked again keeps the parking it had in parked_before (a list of
-- its parkings' field, value lists, oldest first): the tool_call.suspended
-- event of each parking names its ticket and finds the rest in the call
-- (incall.go). The parking's fields are those the new one is written with
-- (ARGV 13.., given with a suspended outcome).
if ARGV[8] ~= '' and (call[at.ticket] or '') ~= '' then
  local before = call[at.parked_before] and cjson.decode(call[at.parked_before]) or {}
  local p = {}
  for i = 13, #ARGV, 2 do
    local f = ARGV[i]
    if call[at[f]] then
      p[#p + 1] = f
      p[#p + 1] = call[at[f]]
    end
  end
  before[#before + 1] = p
  local kept = cjson.encode(before)
  redis.call('HSET', KEYS[1], 'parked_before', kept)
  patch(call, at, {'parked_before', kept})
end
if #ARGV > 12 then
  redis.call('HSET', KEYS[1], unpack(ARGV, 13, #ARGV))
  patch(call, at, ARGV, 13, #ARGV)
end
redis.call('XADD', KEYS[2], '*', 'e', ARGV[6] .. step .. ARGV[7])
if ARGV[8] ~= '' then
  redis.call('XADD', KEYS[2], '*', 'e', ARGV[8])
end
local fanin = 1
-- The run's few fields the fan-in needs, not the whole run: most finishes
-- of a wide step need no more (a script's cost grows with the data it
-- reads, docs/benchmarks.md). The only call of its step (the commit marks
-- it "alone") reads the run whole at once instead: its finish ends the
-- step, whose view needs the run whole and the step's one call id, which
-- is this call's.
local whole, wat
local run
if call[at.alone] and ARGV[10] ~= '' and ARGV[3] ~= 'suspended' then
  whole, wat = read_hash(KEYS[3])
  run = {whole[wat.step], whole[wat.open], whole[wat.status], whole[wat.step_state], whole[wat.nodec]}
else
  run = redis.call('HMGET', KEYS[3], 'step', 'open', 'status', 'step_state', 'nodec')
end
if run[2] and tonumber(run[1]) == tonumber(step) then
  local open = redis.call('HINCRBY', KEYS[3], 'open', -1)
  if whole then
    patch(whole, wat, {'open', open})
  end
  if open > 0 and ARGV[3] ~= 'suspended' then
    fanin = 0
  end
end
if ARGV[3] == 'suspended' then
  return {call, fanin, step, ''}
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
      or tonumber(run[1]) ~= tonumber(step) then
    return ''
  end
  local base = string.sub(KEYS[3], 1, -4)
  local ids
  if whole then
    ids = {string.sub(KEYS[1], #base + #'call:' + 1)}
  else
    ids = redis.call('LRANGE', base .. 'step:' .. step, 0, -1)
  end
  if #ids > tonumber(ARGV[12]) then
    return ''
  end
  local calls = {}
  local size, limit = 0, tonumber(ARGV[11])
  for i = #ids, 1, -1 do
    local key, h = base .. 'call:' .. ids[i], call
    if key ~= KEYS[1] then
      h = redis.call('HGETALL', key)
    end
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
  -- An outbox whose outcomes were all sent stays, an empty stream: only an
  -- outcome in it, or a held decision, needs the reconcile. (A hash goes
  -- with its last field.) A run that has had no decision says so (nodec,
  -- lib.lua's outcome): it has neither.
  if not run[5] and redis.call('EXISTS', base .. 'held', base .. 'outcomes') > 0
      and (redis.call('XLEN', base .. 'outcomes') > 0 or redis.call('EXISTS', base .. 'held') > 0) then
    return ''
  end
  -- The run without its model and metadata: given at its creation and
  -- never changed, they can be big, and the fan-in needs neither (what
  -- does reads the run itself: a step's claim, the run's result).
  local full = whole or redis.call('HGETALL', KEYS[3])
  local runh = {}
  for j = 1, #full, 2 do
    local f = full[j]
    if f ~= 'model' and f ~= 'metadata' then
      runh[#runh + 1] = f
      runh[#runh + 1] = full[j + 1]
      size = size + #f + #full[j + 1]
    end
  end
  if size > limit then
    return ''
  end
  return '{"run":' .. cjson.encode(runh) .. ',"ids":' .. cjson.encode(ids) ..
    ',"calls":' .. cjson.encode(calls) .. '}'
end
return {{}, fanin, step, view()}
