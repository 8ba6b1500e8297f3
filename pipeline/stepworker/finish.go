package stepworker

import (
	"context"
	"errors"
	"fmt"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/store"
	"github.com/stepwise-run/stepwise/topics"
)

// budgetSpent reports whether a step claimed attempts times has used up the
// retry budget (stepworker.max_attempts).
func (w *Worker) budgetSpent(attempts int) bool {
	return attempts > w.settings.MaxAttempts
}

// callBudgetSpent is budgetSpent for a call of tool: its max_attempts when it
// sets one.
func (w *Worker) callBudgetSpent(tool string, attempts int) bool {
	if t, ok := w.cfg.Tool(tool); ok && t.MaxAttempts > 0 {
		return attempts > t.MaxAttempts
	}
	return w.budgetSpent(attempts)
}

// giveUp ends the run with reason error and the detail.
func (w *Worker) giveUp(ctx context.Context, run pipeline.Run, detail string) error {
	return w.finish(ctx, run, pipeline.Termination{Reason: pipeline.ReasonError, Detail: detail})
}

// finish is the one way a run ends outside StepEnd. A run already done is
// left as it is.
func (w *Worker) finish(ctx context.Context, run pipeline.Run, t pipeline.Termination) error {
	done, err := w.store.FinishRun(ctx, run.ID, t, w.now())
	if errors.Is(err, store.ErrStale) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("finish run %s: %w", run.ID, err)
	}
	return w.publishResult(done)
}

// publishResult is RunEnd: it rejects the decisions still held for calls
// that never parked, runs the RunEnd hooks, and publishes the done run's
// outcome to run-results, then marks it published. A worker that dies
// before the mark leaves the run on the sweeper's list, and the sweeper
// publishes again: the result goes out at least once.
func (w *Worker) publishResult(run pipeline.Run) error {
	all := func(store.HeldDecision) bool { return true }
	if err := w.dropHeld(w.ctx, run.ID, all, "before the run ended"); err != nil {
		w.log.Error("reject held decisions of a done run", "run_id", run.ID, "error", err)
	}
	if err := w.runEnd(w.ctx, run); err != nil {
		w.log.Error("RunEnd hooks", "run_id", run.ID, "error", err)
	}
	var t pipeline.Termination
	if run.Termination != nil {
		t = *run.Termination
	}
	if err := topics.Publish(w.pub, w.names.RunResults(), topics.RunResult{
		Header: topics.Header{RunID: run.ID}, Agent: run.Agent, Status: run.Status,
		Step: run.Step, Termination: t, Usage: run.Usage,
	}); err != nil {
		return err // the run stays on the sweeper's list, which publishes again
	}
	return w.store.MarkPublished(w.ctx, run.ID)
}
