-- The library of the scripts: scripts.go puts in front of each the
-- functions it calls (and those they call; libsplit.go), since a script
-- cannot include another, and each function here is made again on every
-- call of a script that has it. Each is a top-level `local function`, with
-- its comment right above it and its closing `end` at the line's start,
-- and calls only those above it (a local is not seen before its line).
-- They are preceded by a constant the store writes from its settings:
--   retention_ms   how long an ended run's keys live (0: for good, or until
--                  the run is archived: archive.go)

-- part is the key of a part of the run whose hash key is run
-- ("<p>:{<id>}:run"): 'events', 'msgs', 'call:<id>', 'step:<n>', ... as
-- keys.go lays them out. Every key of a run shares its hash tag, so a
-- script given the run's key reaches the others in the same cluster slot.
local function part(run, name)
  return string.sub(run, 1, -4) .. name
end

-- compact rebuilds the stream `stream` at its exact size, for a stream that
-- will not grow for a while (its run waits for a decision, or has ended and
-- is kept for the retention). Redis 7 gives a
-- new stream node room for stream-node-max-bytes (4 KB by default) at once:
-- most of a small stream's memory, kept for as long as the stream lives.
-- DUMP and RESTORE rebuild it from its serialized form, exactly sized, with
-- its entries and last id, and ttl (ms) to live (0: for good; a run's keys
-- have none until it ends); a reader blocked on it stays blocked until a
-- new entry. It returns whether it did: a Redis that cannot (miniredis)
-- leaves the stream as it is.
local function compact(stream, ttl)
  local dump = redis.pcall('DUMP', stream)
  if type(dump) ~= 'string' then
    return false
  end
  local restored = redis.pcall('RESTORE', stream, ttl, dump, 'REPLACE')
  return type(restored) == 'table' and restored.ok ~= nil -- an error is a table too
end

-- retire compacts the event stream of the run whose hash is run
-- ("<p>:{<id>}:run"), gives its keys retention_ms to live (above 0; else
-- they are kept for good): the record, messages, event stream, plugin
-- state, decision ids, held decisions, outcome outbox, and the calls of
-- every step up to the run's step (the caller's step, when it knows it;
-- else read); and deletes the steps' lists.
-- The keys are derived from run's name: they share its hash tag, so they are
-- in its cluster slot.
local function retire(run, step)
  local base = part(run, '')
  local keep = retention_ms > 0
  local compacted = compact(base .. 'events', math.max(retention_ms, 0))
  if keep then
    redis.call('PEXPIRE', base .. 'run', retention_ms)
    redis.call('PEXPIRE', base .. 'msgs', retention_ms)
    if not compacted then
      redis.call('PEXPIRE', base .. 'events', retention_ms)
    end
    -- Most runs have no plugin state, decision, outcome or batch answer:
    -- one read tells.
    local rare = {base .. 'state', base .. 'decisions', base .. 'held', base .. 'outcomes', base .. 'answer'}
    if redis.call('EXISTS', unpack(rare)) > 0 then
      for _, k in ipairs(rare) do
        redis.call('PEXPIRE', k, retention_ms)
      end
    end
  end
  -- The step lists only serve a running run; the calls they name are
  -- kept, and found from then on by the conversation that names them
  -- (RunCalls). The lists go, in one command (a step without calls has
  -- none, and a run kept for good need not read them).
  local lists = {}
  for s = 0, tonumber(step or redis.call('HGET', run, 'step') or '0') do
    local list = base .. 'step:' .. s
    local n = 1
    if keep then
      local ids = redis.call('LRANGE', list, 0, -1)
      for _, id in ipairs(ids) do
        redis.call('PEXPIRE', base .. 'call:' .. id, retention_ms)
      end
      n = #ids
    end
    if n > 0 then
      lists[#lists + 1] = list
    end
  end
  for i = 1, #lists, 1000 do -- unpack's limit is a few thousand values
    redis.call('DEL', unpack(lists, i, math.min(i + 999, #lists)))
  end
end

-- termination is the HSET arguments of the termination that ends a run
-- at now (ms), its status aside: its code and detail only when not empty,
-- as a run ends once and has neither before (a field missing reads as
-- ""): 64 bytes of every ended run's hash, kept for the retention.
local function termination(reason, code, detail, now)
  local set = {'term_reason', reason, 'updated_at', now}
  if code ~= '' then
    set[#set + 1] = 'term_code'
    set[#set + 1] = code
  end
  if detail ~= '' then
    set[#set + 1] = 'term_detail'
    set[#set + 1] = detail
  end
  return set
end

-- inherit gives key, just written to an ended run, the run's time to live:
-- a key an ended run gains (a decision id rejected after the end) goes when
-- the run goes.
local function inherit(run, key)
  local ttl = redis.call('PTTL', run)
  if ttl > 0 then
    redis.call('PEXPIRE', key, ttl)
  end
end

-- step_refusal checks that a worker infers a step of the run whose hash
-- is run, as held says: {step, owner, running, inferring}, the run's
-- status and the step's state Go expects of it. It returns the error reply
-- a script returns when not (no run, or the step elsewhere or held by
-- another), nil when so.
local function step_refusal(run, held)
  local r = redis.call('HMGET', run, 'status', 'step', 'step_state', 'lease_owner')
  if not r[1] then
    return redis.error_reply('NOT_FOUND run')
  end
  if r[1] ~= held.running or tonumber(r[2]) ~= held.step or r[3] ~= held.inferring or r[4] ~= held.owner then
    return redis.error_reply('LEASE_LOST run is ' .. r[1] .. ' at step ' .. r[2] .. ' (' .. (r[3] or '') .. '), held by ' .. (r[4] or ''))
  end
  return nil
end

-- outcome records in the run's outbox of decision outcomes (a stream beside
-- the run's hash, run) what became of a decision: applied, held or
-- rejected, and why. The step workers publish each entry to the
-- decision-outcomes topic and delete it (outcomes.go). Every decision
-- records one, a held one too.
local function outcome(run, decision_id, call_id, what, reason)
  local key = string.sub(run, 1, -4) .. 'outcomes'
  redis.call('XADD', key, '*', 'd', decision_id, 'c', call_id, 'o', what, 'r', reason)
  inherit(run, key)
end

-- trim_deltas deletes the message.delta events of the run's current step
-- from its event stream, once the step's turn is committed (its message
-- then holds the whole text): the entries of type delta (the type Go
-- names) from the first delta's id, from (which append_delta keeps in the
-- run's delta_from field; nil or false when the step streamed nothing), to
-- the end.
local function trim_deltas(run, events, from, delta)
  if not from then
    return
  end
  local ids = {}
  for _, entry in ipairs(redis.call('XRANGE', events, from, '+')) do
    local fields = entry[2]
    if fields[1] == 'type' and fields[2] == delta then
      ids[#ids + 1] = entry[1]
      if #ids == 1000 then -- unpack's limit is a few thousand values
        redis.call('XDEL', events, unpack(ids))
        ids = {}
      end
    end
  end
  if #ids > 0 then
    redis.call('XDEL', events, unpack(ids))
  end
  redis.call('HDEL', run, 'delta_from')
end

-- rpush appends values[from..to] (a table: ARGV or one of the script's) to
-- the list at key, in as few commands as unpack's limit allows.
local function rpush(key, values, from, to)
  for i = from, to, 1000 do
    redis.call('RPUSH', key, unpack(values, i, math.min(i + 999, to)))
  end
end

-- emit appends event e, an entry (events.go) as the caller built it and
-- the script completed it (a step or data only the script knows), to the
-- run's event stream, events. Every entry has the same six fields in the
-- same order, so a stream node keeps their names once. It returns the
-- entry's id.
local function emit(events, e)
  return redis.call('XADD', events, '*', 'type', e.type, 'step', e.step, 'call', e.call or '',
    'at', e.at, 'data', e.data or '', 'ref', e.ref or '')
end

-- set_of is the set of the strings of list (an array of the script's JSON
-- argument, e.g. the call statuses Go derived from the domain's tables), to
-- look a string up in: set_of(list)[s].
local function set_of(list)
  local set = {}
  for _, s in ipairs(list) do
    set[s] = true
  end
  return set
end

-- move_open keeps the count of calls in flight of the run whose hash is
-- run when a call of step `step` moves from status `from` to status `to`
-- (in_flight: the set of the statuses of a call in flight, which Go
-- derives from pipeline.DeriveRunStatus: those that keep a run running).
-- The count is the run's `open` field: commit_step writes it for a step
-- that runs two or more calls in parallel, and only then; the call that
-- brings it to 0 fans in, and claim_call claims a call's siblings only
-- while it is 2 or more. Every other script that moves a call of that step
-- in or out of flight counts it here. It returns the count after the move,
-- or nil when the run keeps none for `step`.
local function move_open(run, step, from, to, in_flight)
  local r = redis.call('HMGET', run, 'step', 'open')
  if not r[2] or tonumber(r[1]) ~= tonumber(step) then
    return nil
  end
  local by = (in_flight[to] and 1 or 0) - (in_flight[from] and 1 or 0)
  if by == 0 then
    return tonumber(r[2])
  end
  return redis.call('HINCRBY', run, 'open', by)
end

-- put_state applies updates, plugin state updates as {key, value} tables
-- (a value of "" deletes its key), to the run's plugin state hash, state.
local function put_state(state, updates)
  for _, u in ipairs(updates) do
    if u.value == '' then
      redis.call('HDEL', state, u.key)
    else
      redis.call('HSET', state, u.key, u.value)
    end
  end
end

-- read_fields reads the hash at key whole, as a table by field name, for a
-- script that checks it and returns it as its writes leave it
-- (fields_reply) without reading it again. Empty when there is no hash.
local function read_fields(key)
  local flat = redis.call('HGETALL', key)
  local h = {}
  for i = 1, #flat, 2 do
    h[flat[i]] = flat[i + 1]
  end
  return h
end

-- set_fields writes into h, a hash read by read_fields, what the script
-- wrote to the hash itself: the field, value pairs of set, a value of
-- false for a field deleted.
local function set_fields(h, set)
  for i = 1, #set, 2 do
    h[set[i]] = set[i + 1] or nil
  end
end

-- fields_reply is h, a hash read by read_fields, as HGETALL replies it:
-- field, value, ...; a whole number reads as Redis writes it (without an
-- exponent).
local function fields_reply(h)
  local flat = {}
  for f, v in pairs(h) do
    if type(v) == 'number' then
      if v == math.floor(v) then
        v = string.format('%d', v)
      else
        v = tostring(v)
      end
    end
    flat[#flat + 1] = f
    flat[#flat + 1] = v
  end
  return flat
end

-- ask_approval records in the run's outbox of decision outcomes (the
-- stream outcome writes to, beside the run's hash, run) that a call
-- parked: ask = {call, ticket, at (its parking's parked_at, ms)}, as Go
-- built it. The step workers publish ApprovalRequested for the entry, from
-- the call and the run, and delete it (outcomes.go), in order with the
-- decision outcomes that close it.
local function ask_approval(run, ask)
  local key = string.sub(run, 1, -4) .. 'outcomes'
  redis.call('XADD', key, '*', 'c', ask.call, 't', ask.ticket, 'p', ask.at)
  inherit(run, key)
end

-- close_parked closes the approval requests of the calls among ids (of the
-- run whose hash is run) still parked when the run ends: each call whose
-- status is close.parked gets an applied outcome in the run's outbox
-- (outcome) with the decision id close.prefix .. <call id> and the reason
-- close.reason, as Go named them (cancel.go), so a decider sees every
-- approval request it was asked closed.
local function close_parked(run, ids, close)
  for _, id in ipairs(ids) do
    if redis.call('HGET', part(run, 'call:' .. id), 'status') == close.parked then
      outcome(run, close.prefix .. id, id, 'applied', close.reason)
    end
  end
end

-- emit_failed appends the action.failed entries Go built (failed, a list;
-- empty for most writes), each with the step step when it is given (the
-- script knows it, Go does not).
local function emit_failed(events, failed, step)
  for _, e in ipairs(failed) do
    if step then
      e.step = step
    end
    emit(events, e)
  end
end

-- give_back_step gives back the step of the run whose hash is run, which
-- its claimer leaves without committing (deferred by a limit, or parked
-- awaiting its batch's answer): the step state Go computed, state, no
-- lease, the claim's attempt uncounted, its request unmarked, updated at
-- now; extra holds more field, value pairs to set with them.
local function give_back_step(run, state, now, extra)
  local attempts = tonumber(redis.call('HGET', run, 'attempts') or '1')
  local set = {'step_state', state, 'lease_owner', '', 'lease_until', 0,
    'attempts', math.max(attempts - 1, 0), 'step_sent', '', 'updated_at', now}
  for _, v in ipairs(extra) do
    set[#set + 1] = v
  end
  redis.call('HSET', run, unpack(set))
end
