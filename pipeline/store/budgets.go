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
//	<p>:budget:{batch:<id>}    HASH  limit, spent (tokens), limit_cost, spent_cost
//	<p>:budget:{tenant:<t>}    HASH  spent, spent_cost (the limits are the configuration's)

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
-- Reserve: hold tokens and cost of a budget, unless that would pass one of
-- its limits (a limit of 0 is none).
-- KEYS: 1 the budget hash. ARGV: 1 tokens, 2 cost, 3 token limit, 4 cost
-- limit, 5 "1" to read the limits from the hash instead (a batch's).
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
return {1, spent, spentCost}
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

// Reserve holds amount of budget k, whose limits are limit (nil: the limits
// stored with it, a batch's). It reports false, with what was spent, when
// the budget cannot cover it.
func (s *Store) Reserve(ctx context.Context, k BudgetKey, limit *Amounts, amount Amounts) (bool, Amounts, error) {
	args := []any{amount.Tokens, amount.Cost, 0, 0, "1"}
	if limit != nil {
		args = []any{amount.Tokens, amount.Cost, limit.Tokens, limit.Cost, "0"}
	}
	v, err := reserveScript.Run(ctx, s.rdb, []string{s.budgetKey(k)}, args...).Int64Slice()
	if err != nil {
		return false, Amounts{}, fmt.Errorf("reserve %d tokens of the %s budget of %s: %w", amount.Tokens, k.Kind, k.Name, err)
	}
	return v[0] == 1, Amounts{Tokens: v[1], Cost: v[2]}, nil
}

// Settle corrects a reservation of budget k by delta (what the inference
// used less what was reserved; the whole reservation back when it failed).
func (s *Store) Settle(ctx context.Context, k BudgetKey, delta Amounts) error {
	if delta == (Amounts{}) {
		return nil
	}
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.HIncrBy(ctx, s.budgetKey(k), "spent", delta.Tokens)
		if delta.Cost != 0 {
			p.HIncrBy(ctx, s.budgetKey(k), "spent_cost", delta.Cost)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("settle the %s budget of %s by %d tokens: %w", k.Kind, k.Name, delta.Tokens, err)
	}
	return nil
}
