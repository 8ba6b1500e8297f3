package store

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// Budgets: the tokens, and their cost, a batch's or a tenant's runs have
// spent, reserved before each inference and settled after it
// (config.Budgets). Costs are in millionths of a USD.
//
//	<p>:budget:{batch:<id>}    HASH  limit, spent (tokens), limit_cost, spent_cost,
//	                                 hold:<claim> per reservation not yet settled
//	<p>:budget:{tenant:<t>}    HASH  spent, spent_cost, hold:<claim> (the limits are the
//	                                 configuration's)

// BudgetKey names a budget: of a batch or of a tenant.
type BudgetKey struct {
	Kind string // "batch" or "tenant"
	Name string
}

// Amounts are tokens and their cost in millionths of a USD: what a budget
// allows (a zero field is no cap), holds or has spent.
type Amounts struct {
	Tokens int64
	Cost   int64
}

func (s *Store) budgetKey(k BudgetKey) string {
	return s.prefix + ":budget:{" + k.Kind + ":" + k.Name + "}"
}

var reserveScript = redis.NewScript(`
-- Reserve: hold tokens and cost of a budget for a holder, unless that would
-- pass one of its limits (a limit of 0 is none). The hold is kept as
-- field "hold:<holder>" = "<tokens> <cost>" until it is settled or
-- released (settleScript).
-- KEYS: 1 the budget hash. ARGV: 1 tokens, 2 cost, 3 token limit, 4 cost
-- limit, 5 "1" to read the limits from the hash instead (a batch's),
-- 6 the holder.
-- Returns {1, spent tokens, spent cost} when reserved, {0, ...} when not.
local limit, limitCost = tonumber(ARGV[3]), tonumber(ARGV[4])
if ARGV[5] == '1' then
  local l = redis.call('HMGET', KEYS[1], 'limit', 'limit_cost')
  limit, limitCost = tonumber(l[1] or '0'), tonumber(l[2] or '0')
end
local s = redis.call('HMGET', KEYS[1], 'spent', 'spent_cost')
local spent, spentCost = tonumber(s[1] or '0'), tonumber(s[2] or '0')
if limit <= 0 and limitCost <= 0 then
  return {0, spent, spentCost}
end
if limit > 0 and spent + tonumber(ARGV[1]) > limit or limitCost > 0 and spentCost + tonumber(ARGV[2]) > limitCost then
  return {0, spent, spentCost}
end
spent = redis.call('HINCRBY', KEYS[1], 'spent', ARGV[1])
if ARGV[2] ~= '0' then
  spentCost = redis.call('HINCRBY', KEYS[1], 'spent_cost', ARGV[2])
end
redis.call('HSET', KEYS[1], 'hold:' .. ARGV[6], ARGV[1] .. ' ' .. ARGV[2])
return {1, spent, spentCost}
`)

var settleScript = redis.NewScript(`
-- Settle: end a holder's hold of a budget with what it used: the budget
-- counts the use instead of the hold. A hold already released (its holder
-- was taken for dead) counts the use on top. Release is a settle that only
-- acts on a hold that is there.
-- KEYS: 1 the budget hash. ARGV: 1 holder, 2 tokens used, 3 cost used,
-- 4 "1" for a release.
-- Returns 1 when a hold was there, 0 when not.
local hold = redis.call('HGET', KEYS[1], 'hold:' .. ARGV[1])
if not hold and ARGV[4] == '1' then
  return 0
end
local tokens, cost = 0, 0
if hold then
  local sp = string.find(hold, ' ', 1, true)
  tokens, cost = tonumber(string.sub(hold, 1, sp - 1)), tonumber(string.sub(hold, sp + 1))
  redis.call('HDEL', KEYS[1], 'hold:' .. ARGV[1])
end
local dt, dc = tonumber(ARGV[2]) - tokens, tonumber(ARGV[3]) - cost
if dt ~= 0 then
  redis.call('HINCRBY', KEYS[1], 'spent', dt)
end
if dc ~= 0 then
  redis.call('HINCRBY', KEYS[1], 'spent_cost', dc)
end
if hold then
  return 1
end
return 0
`)

// SetBatchBudget gives batch its limits, once: a batch sent again keeps its
// first budget and what it has spent.
func (s *Store) SetBatchBudget(ctx context.Context, batch string, limit Amounts) error {
	key := s.budgetKey(BudgetKey{Kind: "batch", Name: batch})
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.HSetNX(ctx, key, "limit", limit.Tokens)
		p.HSetNX(ctx, key, "limit_cost", limit.Cost)
		if s.retention > 0 {
			p.PExpire(ctx, key, 2*s.retention)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("budget of batch %s: %w", batch, err)
	}
	return nil
}

// Reserve holds amount of budget k for holder (a claim of a step), whose
// limits are limit (nil: the limits stored with it, a batch's). It reports
// false, with what was spent, when the budget cannot cover it.
func (s *Store) Reserve(ctx context.Context, k BudgetKey, limit *Amounts, amount Amounts, holder string) (bool, Amounts, error) {
	args := []any{amount.Tokens, amount.Cost, 0, 0, "1", holder}
	if limit != nil {
		args = []any{amount.Tokens, amount.Cost, limit.Tokens, limit.Cost, "0", holder}
	}
	v, err := reserveScript.Run(ctx, s.rdb, []string{s.budgetKey(k)}, args...).Int64Slice()
	if err != nil {
		return false, Amounts{}, fmt.Errorf("reserve %d tokens of the %s budget of %s: %w", amount.Tokens, k.Kind, k.Name, err)
	}
	return v[0] == 1, Amounts{Tokens: v[1], Cost: v[2]}, nil
}

// Settle ends holder's hold of budget k with what it used (zero: the
// inference failed, the whole hold comes back). When the hold was released
// meanwhile (Release: its holder was taken for dead), used is counted on
// its own: the tokens were spent all the same.
func (s *Store) Settle(ctx context.Context, k BudgetKey, holder string, used Amounts) error {
	if err := settleScript.Run(ctx, s.rdb, []string{s.budgetKey(k)}, holder, used.Tokens, used.Cost, "0").Err(); err != nil {
		return fmt.Errorf("settle the %s budget of %s for %s: %w", k.Kind, k.Name, holder, err)
	}
	return nil
}

// Release ends holder's hold of budget k with used (zero: all of it comes
// back), if it still has one: the hold of a claim whose settle failed, or
// whose worker died before it (holds.go). It reports whether there was a
// hold; with none, it counts nothing.
func (s *Store) Release(ctx context.Context, k BudgetKey, holder string, used Amounts) (bool, error) {
	n, err := settleScript.Run(ctx, s.rdb, []string{s.budgetKey(k)}, holder, used.Tokens, used.Cost, "1").Int64()
	if err != nil {
		return false, fmt.Errorf("release the hold of %s on the %s budget of %s: %w", holder, k.Kind, k.Name, err)
	}
	return n == 1, nil
}
