package store

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// Budgets: the tokens a batch's or a tenant's runs have spent, reserved
// before each inference and settled after it (config.Budgets).
//
//	<p>:budget:{batch:<id>}    HASH  limit (tokens), spent
//	<p>:budget:{tenant:<t>}    HASH  spent (the limit is the configuration's)

// BudgetKey names a budget: of a batch or of a tenant.
type BudgetKey struct {
	Kind string // "batch" or "tenant"
	Name string
}

func (s *Store) budgetKey(k BudgetKey) string {
	return s.prefix + ":budget:{" + k.Kind + ":" + k.Name + "}"
}

var reserveScript = redis.NewScript(`
-- Reserve: hold amount tokens of a budget, unless that would pass its limit.
-- KEYS: 1 the budget hash. ARGV: 1 amount, 2 limit (0: the hash's own)
-- Returns {1, spent} when reserved, {0, spent} when not.
local limit = tonumber(ARGV[2])
if limit == 0 then
  limit = tonumber(redis.call('HGET', KEYS[1], 'limit') or '0')
end
local spent = tonumber(redis.call('HGET', KEYS[1], 'spent') or '0')
if limit <= 0 or spent + tonumber(ARGV[1]) > limit then
  return {0, spent}
end
return {1, redis.call('HINCRBY', KEYS[1], 'spent', ARGV[1])}
`)

// SetBatchBudget gives batch a budget of tokens, once: a batch sent again
// keeps its first budget and what it has spent.
func (s *Store) SetBatchBudget(ctx context.Context, batch string, tokens int64) error {
	key := s.budgetKey(BudgetKey{Kind: "batch", Name: batch})
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.HSetNX(ctx, key, "limit", tokens)
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

// Reserve holds amount tokens of budget k, whose limit is limit (0: the
// limit stored with it, a batch's). It reports false, with what was spent,
// when the budget cannot cover them.
func (s *Store) Reserve(ctx context.Context, k BudgetKey, limit, amount int64) (bool, int64, error) {
	v, err := reserveScript.Run(ctx, s.rdb, []string{s.budgetKey(k)}, amount, limit).Int64Slice()
	if err != nil {
		return false, 0, fmt.Errorf("reserve %d tokens of the %s budget of %s: %w", amount, k.Kind, k.Name, err)
	}
	return v[0] == 1, v[1], nil
}

// Settle corrects a reservation of budget k by delta tokens (what the
// inference used less what was reserved; the whole reservation back when it
// failed).
func (s *Store) Settle(ctx context.Context, k BudgetKey, delta int64) error {
	if delta == 0 {
		return nil
	}
	if err := s.rdb.HIncrBy(ctx, s.budgetKey(k), "spent", delta).Err(); err != nil {
		return fmt.Errorf("settle the %s budget of %s by %d tokens: %w", k.Kind, k.Name, delta, err)
	}
	return nil
}
