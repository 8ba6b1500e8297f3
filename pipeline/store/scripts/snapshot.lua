-- Snapshot: what a reconcile reads of a run, in one round trip: its hash,
-- its held decisions, the outcomes waiting in its outbox, and the call
-- list of its current step with every call's hash. The step list and the
-- calls are derived from the run hash's name (lib.lua: part): they share
-- its hash tag, so its cluster slot.
-- Outcomes read with a claim (claim > 0) are claimed for the reader as
-- claim_outcomes.lua does (a claim older than `claim` ms by the caller's
-- clock has run out), so it publishes them without another round
-- trip; none are returned while another reader holds the claim, and then
-- busy is when that claim runs out (ms; 0: no outcome withheld), for a
-- reconcile to come back to them should their reader have died.
-- KEYS: 1 run hash, 2 held decisions hash, 3 outcomes stream, 4 its claim
-- ARGV[1]: {count (how many outcomes at most), now (ms), claim (ms; 0:
--   read the outcomes unclaimed)}
-- Returns {run hash, held hash, outcomes (as XRANGE), call ids, {call
-- hash, ...}, busy}; {{}} when there is no run.
local run_key, held_key, outcomes_key, claim_key = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local a = cjson.decode(ARGV[1])
local run = redis.call('HGETALL', run_key)
if #run == 0 then
  return {run}
end
local step = '0'
for i = 1, #run, 2 do
  if run[i] == 'step' then
    step = run[i + 1]
    break
  end
end
local ids = redis.call('LRANGE', part(run_key, 'step:' .. step), 0, -1)
local calls = {}
for i, id in ipairs(ids) do
  calls[i] = redis.call('HGETALL', part(run_key, 'call:' .. id))
end
local outcomes = redis.call('XRANGE', outcomes_key, '-', '+', 'COUNT', a.count)
local busy = 0
if #outcomes > 0 and a.claim > 0 then
  local at = redis.call('GET', claim_key)
  if at and tonumber(at) + a.claim > a.now then
    outcomes = {}
    busy = tonumber(at) + a.claim
  else
    redis.call('SET', claim_key, a.now, 'PX', a.claim)
  end
end
return {run, redis.call('HGETALL', held_key), outcomes, ids, calls, busy}
