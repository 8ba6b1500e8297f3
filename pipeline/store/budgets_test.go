package store_test

import (
	"fmt"
	"testing"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/store"
)

var budgetCases = []contractCase{
	{"a_batch_budget_holds_tokens_and_cost_until_either_limit_and_settles_both", func(t *testing.T, f *fixture) {
		k := store.BudgetKey{Kind: "batch", Name: "b1"}
		if err := f.st.SetBatchBudget(f.ctx, "b1", store.Amounts{Tokens: 1000, Cost: 500}); err != nil {
			t.Fatal(err)
		}
		// Sent again with other limits, the batch keeps its first ones.
		if err := f.st.SetBatchBudget(f.ctx, "b1", store.Amounts{Tokens: 1 << 40, Cost: 1 << 40}); err != nil {
			t.Fatal(err)
		}
		n := 0
		reserve := func(amount store.Amounts) (bool, store.Amounts) {
			t.Helper()
			n++
			ok, spent, err := f.st.Reserve(f.ctx, k, nil, amount, fmt.Sprintf("w#%d", n))
			if err != nil {
				t.Fatal(err)
			}
			return ok, spent
		}
		if ok, spent := reserve(store.Amounts{Tokens: 100, Cost: 300}); !ok || spent != (store.Amounts{Tokens: 100, Cost: 300}) {
			t.Fatalf("first reservation: %v, %+v", ok, spent)
		}
		// The cost limit refuses while tokens would still fit; a refusal holds nothing.
		if ok, spent := reserve(store.Amounts{Tokens: 100, Cost: 300}); ok || spent != (store.Amounts{Tokens: 100, Cost: 300}) {
			t.Fatalf("over the cost limit: %v, %+v", ok, spent)
		}
		// The inference used 40 tokens costing 120: the rest comes back.
		if err := f.st.Settle(f.ctx, k, "w#1", store.Amounts{Tokens: 40, Cost: 120}); err != nil {
			t.Fatal(err)
		}
		if ok, spent := reserve(store.Amounts{Tokens: 100, Cost: 300}); !ok || spent != (store.Amounts{Tokens: 140, Cost: 420}) {
			t.Fatalf("after the settle: %v, %+v", ok, spent)
		}
	}},
	{"a_tenant_budget_takes_its_limits_from_the_caller_and_a_zero_limit_is_no_cap", func(t *testing.T, f *fixture) {
		k := store.BudgetKey{Kind: "tenant", Name: "acme"}
		tokensOnly := &store.Amounts{Tokens: 250}
		for i, want := range []bool{true, true, false} {
			ok, _, err := f.st.Reserve(f.ctx, k, tokensOnly, store.Amounts{Tokens: 100, Cost: 1 << 30}, fmt.Sprintf("w#%d", i))
			if err != nil || ok != want {
				t.Fatalf("reservation %d: %v, %v", i, ok, err)
			}
		}
		// A batch without a record (expired, or never given a budget) holds nothing.
		if ok, _, err := f.st.Reserve(f.ctx, store.BudgetKey{Kind: "batch", Name: "gone"}, nil, store.Amounts{Tokens: 1}, "w#9"); ok || err != nil {
			t.Fatalf("a batch without a budget: %v, %v", ok, err)
		}
	}},
	{"a_hold_whose_claim_died_is_released_once_and_a_late_settle_counts_the_use", func(t *testing.T, f *fixture) {
		k := store.BudgetKey{Kind: "tenant", Name: "acme"}
		limit := &store.Amounts{Tokens: 1000}
		spent := func() store.Amounts {
			t.Helper()
			_, s, err := f.st.Reserve(f.ctx, k, &store.Amounts{Tokens: 1}, store.Amounts{Tokens: 2}, "probe") // refused: reads what is spent
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
		for _, holder := range []string{"dead#1", "slow#2"} {
			if ok, _, err := f.st.Reserve(f.ctx, k, limit, store.Amounts{Tokens: 300, Cost: 30}, holder); !ok || err != nil {
				t.Fatalf("reserve for %s: %v, %v", holder, ok, err)
			}
		}
		// The sweeper gives back the holds of both claims, whose leases ran
		// out: once each.
		for _, holder := range []string{"dead#1", "slow#2", "dead#1"} {
			if _, err := f.st.Release(f.ctx, k, holder, store.Amounts{}); err != nil {
				t.Fatal(err)
			}
		}
		if got := spent(); got != (store.Amounts{}) {
			t.Fatalf("after the releases: spent %+v, want nothing", got)
		}
		// The slow one was not dead: its inference used 120 tokens, and they count.
		if err := f.st.Settle(f.ctx, k, "slow#2", store.Amounts{Tokens: 120, Cost: 12}); err != nil {
			t.Fatal(err)
		}
		if got := spent(); got != (store.Amounts{Tokens: 120, Cost: 12}) {
			t.Fatalf("after the late settle: spent %+v, want the 120 tokens used", got)
		}
		if released, err := f.st.Release(f.ctx, k, "slow#2", store.Amounts{}); released || err != nil {
			t.Fatalf("a release after the settle: %v, %v", released, err)
		}
	}},
	{"a_step_commit_adds_its_cost_to_the_run", func(t *testing.T, f *fixture) {
		f.claimed(t, "r1")
		c := commitOf()
		c.Usage.CostUSD = 0.000125
		if _, _, err := f.st.CommitStep(f.ctx, "r1", 0, "w1", c, at(2)); err != nil {
			t.Fatal(err)
		}
		run, err := f.st.GetRun(f.ctx, "r1")
		if err != nil || run.Usage != (pipeline.Usage{InputTokens: 10, OutputTokens: 3, CostUSD: 0.000125}) {
			t.Fatalf("run usage %+v, %v", run.Usage, err)
		}
		st, err := f.st.RunStatuses(f.ctx, []string{"r1"})
		if err != nil || st[0].Usage != run.Usage {
			t.Fatalf("statuses %+v, %v", st, err)
		}
	}},
}
