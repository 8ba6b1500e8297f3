package stepworker

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/store"
)

// Budgets (config.Budgets, store.Reserve): before its inference a step
// reserves budgets.reserve_tokens from its batch's budget (when the batch
// has one) and its tenant's (when the configuration gives it one), and
// settles each with what the inference used. A run whose budget cannot
// cover the reservation ends stopped, code budget. Runs with neither
// budget pay nothing.

// reservation is what a step holds of its budgets.
type reservation struct {
	keys   []store.BudgetKey
	amount int64
}

// reserve holds the step's reservation, or ends the run stopped/budget
// and returns false.
func (w *Worker) reserve(ctx context.Context, run pipeline.Run, log *slog.Logger) (reservation, bool) {
	type budget struct {
		key   store.BudgetKey
		limit int64
	}
	var budgets []budget
	if run.BatchBudget && run.Batch != "" {
		budgets = append(budgets, budget{store.BudgetKey{Kind: "batch", Name: run.Batch}, 0})
	}
	if b, ok := w.cfg.Budgets.Tenant(run.Tenant); ok {
		budgets = append(budgets, budget{store.BudgetKey{Kind: "tenant", Name: run.Tenant}, b.Tokens})
	}
	res := reservation{amount: w.cfg.Budgets.Reserve()}
	for _, b := range budgets {
		ok, spent, err := w.store.Reserve(ctx, b.key, b.limit, res.amount)
		if err == nil && ok {
			res.keys = append(res.keys, b.key)
			continue
		}
		w.settle(res, 0, log) // give back what was held of the others
		if err != nil {
			log.Error("reserve the step's budget; the sweeper will retry the step", "error", err)
			return reservation{}, false
		}
		detail := fmt.Sprintf("the %s budget of %s is spent: %d tokens used, a step reserves %d", b.key.Kind, b.key.Name, spent, res.amount)
		w.logErr(log, "end run", w.finish(ctx, run, pipeline.Termination{Reason: pipeline.ReasonStopped, Code: "budget", Detail: detail}))
		return reservation{}, false
	}
	return res, true
}

// settle corrects the reservation with the tokens the inference used
// (0 when it failed: the whole reservation comes back).
func (w *Worker) settle(res reservation, used int64, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(w.ctx), releaseTimeout)
	defer cancel()
	for _, k := range res.keys {
		w.logErr(log, "settle a budget", w.store.Settle(ctx, k, used-res.amount))
	}
}
