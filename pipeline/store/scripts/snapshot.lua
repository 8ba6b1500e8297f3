-- Snapshot: what a reconcile reads of a run, in one round trip: its hash,
-- its held decisions, the outcomes waiting in its outbox, and the call
-- list of its current step with every call's hash. The step list and the
-- calls are derived from the run hash's name: they share its hash tag, so
-- its cluster slot.
-- Outcomes read with a claim (ARGV 3 > 0) are claimed for the reader as
-- claim_outcomes.lua does (a claim older than ARGV 3 ms has run out), so it publishes them without another round
-- trip; none are returned while another reader holds the claim.
-- KEYS: 1 run hash, 2 held decisions hash, 3 outcomes stream, 4 its claim
-- ARGV: 1 how many outcomes at most, 2 now (ms), 3 claim (ms; 0: read
--       the outcomes unclaimed)
-- Returns {run hash, held hash, outcomes (as XRANGE), call ids, {call
-- hash, ...}}; {{}} when there is no run.
local run = redis.call('HGETALL', KEYS[1])
if #run == 0 then
  return {run}
end
local base = string.sub(KEYS[1], 1, -4)
local step = '0'
for i = 1, #run, 2 do
  if run[i] == 'step' then
    step = run[i + 1]
    break
  end
end
local ids = redis.call('LRANGE', base .. 'step:' .. step, 0, -1)
local calls = {}
for i, id in ipairs(ids) do
  calls[i] = redis.call('HGETALL', base .. 'call:' .. id)
end
local outcomes = redis.call('XRANGE', KEYS[3], '-', '+', 'COUNT', ARGV[1])
if #outcomes > 0 and ARGV[3] ~= '0' then
  local at = redis.call('GET', KEYS[4])
  if at and tonumber(at) + tonumber(ARGV[3]) > tonumber(ARGV[2]) then
    outcomes = {}
  else
    redis.call('SET', KEYS[4], ARGV[2], 'PX', ARGV[3])
  end
end
return {run, redis.call('HGETALL', KEYS[2]), outcomes, ids, calls}
