package stepworker

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/config"
	"github.com/stepwise-run/stepwise/pipeline/model"
	"github.com/stepwise-run/stepwise/pipeline/store"
)

// Budgets (config.Budgets, store.Reserve): before its inference a step
// reserves budgets.reserve_tokens, and their cost at its model's higher
// price (its batch price for a run in batch mode, inBatchMode: ADR 0073),
// from its batch's budget (when the batch has one) and its tenant's (when
// the configuration gives it one), and settles each with what the
// inference used, at the batch price when the Batch API answered. A run
// whose budget cannot cover the reservation ends stopped, code budget.
// Runs with neither budget pay nothing. The reservation is held by the
// step's claim, and recorded with the run
// (store.RecordHold) before it is made: a hold its claim did not settle
// (the settle failed, or its worker died) is settled from that record by
// the run's next claim, or before the run's result (ADR 0053).

// reservation is what a step's claim (holder) of run runID holds of its
// budgets.
type reservation struct {
	keys   []store.BudgetKey
	runID  string
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

// reserve holds the step's reservation for its claim (run.LeaseOwner), its
// cost at mdl's price for the run (its batch price in batch mode), or ends
// the run stopped/budget and returns false.
func (w *Worker) reserve(ctx context.Context, run pipeline.Run, mdl model.Model, log *slog.Logger) (reservation, bool) {
	budgets := w.budgetsOf(run)
	if len(budgets) == 0 {
		return reservation{}, true
	}
	tokens := w.cfg.Budgets.Reserve()
	price := w.price(run, inBatchMode(run, mdl))
	res := reservation{runID: run.ID, holder: run.LeaseOwner, amount: store.Amounts{Tokens: tokens, Cost: price.Most(tokens)}}
	earlier, err := w.store.RecordHold(ctx, run.ID, res.holder)
	if err != nil {
		log.Error("record the step's budget hold; the sweeper will retry the step", "error", err)
		return reservation{}, false
	}
	w.logErr(log, "settle the budget holds of the run's earlier claims", w.settleHolds(ctx, run, earlier))
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

// settleHolds ends the holds recorded with the run (store.Holds) that
// their claims did not settle: with the use recorded, or whole when none
// was, and forgets them. A claim that still infers (the run ended under
// it) has its hold given back whole: its own settle then counts its use
// on top. A hold already settled counts nothing again (store.Release).
func (w *Worker) settleHolds(ctx context.Context, run pipeline.Run, holds []store.Hold) error {
	now := w.now()
	for _, h := range holds {
		var used store.Amounts
		live := run.StepState == pipeline.StepInferring && run.LeaseOwner == h.Claim && !run.LeaseUntil.Before(now)
		if h.Used != nil && !live {
			used = *h.Used
		}
		for _, b := range w.budgetsOf(run) {
			if _, err := w.store.Release(ctx, b.key, h.Claim, used); err != nil {
				return err
			}
		}
		if err := w.store.HoldSettled(ctx, run.ID, h.Claim); err != nil {
			return err
		}
	}
	return nil
}

// price is the price of the run's model (budgets.prices): its batch price
// when batched, for a step answered through the provider's Batch API.
func (w *Worker) price(run pipeline.Run, batched bool) config.Price {
	p := w.cfg.Budgets.Price(w.models.keyOf(run))
	if batched {
		return p.Batch()
	}
	return p
}

// cost prices resp's usage at the run's model's price, its batch price
// when the Batch API answered.
func (w *Worker) cost(run pipeline.Run, resp model.Response) pipeline.Usage {
	u := resp.Usage
	u.CostUSD = pipeline.USD(w.price(run, resp.Batched).MicroUSD(u.InputTokens, u.OutputTokens))
	return u
}

// settle ends the reservation with what the inference used (zero when it
// failed: the whole reservation comes back), the use recorded with the run
// first; once every budget is settled the run forgets the hold. A settle
// that fails leaves the hold recorded, for settleHolds.
func (w *Worker) settle(res reservation, used store.Amounts, log *slog.Logger) {
	if res.holder == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(w.ctx), releaseTimeout)
	defer cancel()
	if used != (store.Amounts{}) {
		w.logErr(log, "record the budget use", w.store.HoldUsed(ctx, res.runID, res.holder, used))
	}
	settled := true
	for _, k := range res.keys {
		if err := w.store.Settle(ctx, k, res.holder, used); err != nil {
			log.Error("settle a budget; the run's next claim or its end settles it", "error", err)
			settled = false
		}
	}
	if settled {
		w.logErr(log, "forget a settled budget hold", w.store.HoldSettled(ctx, res.runID, res.holder))
	}
}
