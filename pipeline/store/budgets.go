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
	arg := reserveArg{Tokens: amount.Tokens, Cost: amount.Cost, Stored: limit == nil, Holder: holder}
	if limit != nil {
		arg.Limit, arg.LimitCost = limit.Tokens, limit.Cost
	}
	what := fmt.Sprintf("reserve %d tokens of the %s budget of %s", amount.Tokens, k.Kind, k.Name)
	r, err := s.call(ctx, s.scripts.budgetReserve, what, []string{s.budgetKey(k)}, arg)
	if err != nil {
		return false, Amounts{}, err
	}
	v, err := replyList(r, 3)
	if err != nil {
		return false, Amounts{}, fmt.Errorf("%s: %w", what, err)
	}
	spent, ok1 := v[1].(int64)
	cost, ok2 := v[2].(int64)
	if !ok1 || !ok2 {
		return false, Amounts{}, fmt.Errorf("%s: unexpected reply %v", what, v)
	}
	return v[0] == int64(1), Amounts{Tokens: spent, Cost: cost}, nil
}

// reserveArg is budget_reserve's argument: the amount, the limits (or
// Stored: the budget's own) and the holder.
type reserveArg struct {
	Tokens    int64  `json:"tokens"`
	Cost      int64  `json:"cost"`
	Limit     int64  `json:"limit"`
	LimitCost int64  `json:"limit_cost"`
	Stored    bool   `json:"stored"`
	Holder    string `json:"holder"`
}

// settleArg is budget_settle's argument: the holder, what it used, and
// whether this is a release.
type settleArg struct {
	Holder  string `json:"holder"`
	Tokens  int64  `json:"tokens"`
	Cost    int64  `json:"cost"`
	Release bool   `json:"release"`
}

// Settle ends holder's hold of budget k with what it used (zero: the
// inference failed, the whole hold comes back). When the hold was released
// meanwhile (Release: its holder was taken for dead), used is counted on
// its own: the tokens were spent all the same.
func (s *Store) Settle(ctx context.Context, k BudgetKey, holder string, used Amounts) error {
	what := fmt.Sprintf("settle the %s budget of %s for %s", k.Kind, k.Name, holder)
	_, err := s.call(ctx, s.scripts.budgetSettle, what, []string{s.budgetKey(k)},
		settleArg{Holder: holder, Tokens: used.Tokens, Cost: used.Cost})
	return err
}

// Release ends holder's hold of budget k with used (zero: all of it comes
// back), if it still has one: the hold of a claim whose settle failed, or
// whose worker died before it (holds.go). It reports whether there was a
// hold; with none, it counts nothing.
func (s *Store) Release(ctx context.Context, k BudgetKey, holder string, used Amounts) (bool, error) {
	what := fmt.Sprintf("release the hold of %s on the %s budget of %s", holder, k.Kind, k.Name)
	n, err := s.call(ctx, s.scripts.budgetSettle, what, []string{s.budgetKey(k)},
		settleArg{Holder: holder, Tokens: used.Tokens, Cost: used.Cost, Release: true})
	if err != nil {
		return false, err
	}
	return n == int64(1), nil
}
