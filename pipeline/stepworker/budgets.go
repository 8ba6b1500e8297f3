package stepworker

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/store"
)

// Budgets (config.Budgets, store.Reserve): before its inference a step
// reserves budgets.reserve_tokens, and their cost at its model's higher
// price, from its batch's budget (when the batch has one) and its
// tenant's (when the configuration gives it one), and settles each with
// what the inference used. A run whose budget cannot cover the reservation
// ends stopped, code budget. Runs with neither budget pay nothing. The
// reservation is held by the step's claim: a claim whose lease runs out
// (its worker died) has its hold given back when the step is re-driven.

// reservation is what a step's claim (holder) holds of its budgets.
type reservation struct {
	keys   []store.BudgetKey
	holder string
	amount store.Amounts
}

// budget is one budget a run's steps reserve from.
type budget struct {
	key   store.BudgetKey
	limit *store.Amounts // nil: the batch's own
}

// budgetsOf are the budgets the run's steps reserve from: its batch's,
// when the batch has one, and its tenant's, when the configuration gives
// it one.
func (w *Worker) budgetsOf(run pipeline.Run) []budget {
	var budgets []budget
	if run.BatchBudget && run.Batch != "" {
		budgets = append(budgets, budget{store.BudgetKey{Kind: "batch", Name: run.Batch}, nil})
	}
	if b, ok := w.cfg.Budgets.Tenant(run.Tenant); ok {
		budgets = append(budgets, budget{store.BudgetKey{Kind: "tenant", Name: run.Tenant}, &store.Amounts{Tokens: b.Tokens, Cost: b.MicroUSD()}})
	}
	return budgets
}

// reserve holds the step's reservation for its claim (run.LeaseOwner), or
// ends the run stopped/budget and returns false.
func (w *Worker) reserve(ctx context.Context, run pipeline.Run, log *slog.Logger) (reservation, bool) {
	budgets := w.budgetsOf(run)
	if len(budgets) == 0 {
		return reservation{}, true
	}
	tokens := w.cfg.Budgets.Reserve()
	res := reservation{holder: run.LeaseOwner, amount: store.Amounts{Tokens: tokens, Cost: w.cfg.Budgets.Price(w.models.keyOf(run)).Most(tokens)}}
	for _, b := range budgets {
		ok, spent, err := w.store.Reserve(ctx, b.key, b.limit, res.amount, res.holder)
		if err == nil && ok {
			res.keys = append(res.keys, b.key)
			continue
		}
		w.settle(res, store.Amounts{}, log) // give back what was held of the others
		if err != nil {
			log.Error("reserve the step's budget; the sweeper will retry the step", "error", err)
			return reservation{}, false
		}
		detail := fmt.Sprintf("the %s budget of %s is spent: %d tokens and %.6f USD used, a step reserves %d tokens and %.6f USD",
			b.key.Kind, b.key.Name, spent.Tokens, pipeline.USD(spent.Cost), res.amount.Tokens, pipeline.USD(res.amount.Cost))
		w.logErr(log, "end run", w.finish(ctx, run, pipeline.Termination{Reason: pipeline.ReasonStopped, Code: "budget", Detail: detail}))
		return reservation{}, false
	}
	return res, true
}

// releaseHolds gives back what the run's step claim owner holds of the
// run's budgets: a claim whose lease ran out (its worker died) before it
// settled. Without it, each such death would keep a reservation for good.
func (w *Worker) releaseHolds(ctx context.Context, run pipeline.Run, owner string) {
	for _, b := range w.budgetsOf(run) {
		if _, err := w.store.Release(ctx, b.key, owner); err != nil {
			w.log.Error("give back the budget held by a dead claim", "run_id", run.ID, "owner", owner, "error", err)
		}
	}
}

// cost prices usage at the run's model's price (budgets.prices).
func (w *Worker) cost(run pipeline.Run, u pipeline.Usage) pipeline.Usage {
	u.CostUSD = pipeline.USD(w.cfg.Budgets.Price(w.models.keyOf(run)).MicroUSD(u.InputTokens, u.OutputTokens))
	return u
}

// settle ends the reservation with what the inference used (zero when it
// failed: the whole reservation comes back).
func (w *Worker) settle(res reservation, used store.Amounts, log *slog.Logger) {
	if len(res.keys) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(w.ctx), releaseTimeout)
	defer cancel()
	for _, k := range res.keys {
		w.logErr(log, "settle a budget", w.store.Settle(ctx, k, res.holder, used))
	}
}
