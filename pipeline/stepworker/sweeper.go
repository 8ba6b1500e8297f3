package stepworker

import (
	"context"
	"fmt"
	"time"

	"github.com/stepwise-run/stepwise/pipeline"
)

// SweepBatch is how many due runs one sweep takes at most.
const SweepBatch = 256

// RunSweeper sweeps every StepWorker.SweepInterval until ctx ends. Any
// number of step workers may sweep at once: each due run goes to one of them.
func (w *Worker) RunSweeper(ctx context.Context) {
	t := time.NewTicker(w.settings.SweepInterval.Duration)
	defer t.Stop()
	for {
		if n, err := w.Sweep(ctx); err != nil {
			w.log.Error("sweep", "error", err, "runs", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Sweep looks once at the runs that are due and re-drives what went missing:
// a step request nobody took, a step or call whose lease ran out (its worker
// died), a result nobody fanned in. It returns how many runs it looked at.
// Every runnable run is looked at again within one lease period, so a dead
// worker's work is re-driven within about two.
func (w *Worker) Sweep(ctx context.Context) (int, error) {
	now := w.now()
	recheck := now.Add(w.settings.Lease.Duration)
	ids, err := w.store.DueRuns(ctx, now, SweepBatch, recheck)
	if err != nil {
		return 0, fmt.Errorf("due runs: %w", err)
	}
	for _, id := range ids {
		if err := w.sweepRun(ctx, id, now); err != nil {
			w.log.Error("sweep run", "run_id", id, "error", err)
		}
	}
	return len(ids), nil
}

func (w *Worker) sweepRun(ctx context.Context, id string, now time.Time) error {
	run, err := w.store.GetRun(ctx, id)
	if err != nil {
		return err
	}
	if run.Status.Final() {
		return w.store.Unschedule(ctx, id)
	}
	switch run.StepState {
	case pipeline.StepPending:
		if now.Sub(run.UpdatedAt) >= w.settings.DispatchTimeout.Duration {
			return w.requestStep(run)
		}
	case pipeline.StepInferring:
		if run.LeaseUntil.Before(now) {
			return w.requestStep(run) // the claim counts the attempt and gives up past the budget
		}
	case pipeline.StepTools:
		calls, err := w.store.StepCalls(ctx, id, run.Step)
		if err != nil {
			return err
		}
		return w.sweepCalls(ctx, run, calls, now)
	}
	return nil
}

func (w *Worker) sweepCalls(ctx context.Context, run pipeline.Run, calls []pipeline.ToolCall, now time.Time) error {
	if pipeline.DeriveRunStatus(pipeline.CallStatuses(calls)) == pipeline.RunDone {
		return w.endStep(ctx, run, calls) // the last result's fan-in went missing
	}
	var redrive []pipeline.ToolCall
	for _, c := range calls {
		if c.Status == pipeline.CallRunning && c.LeaseUntil.Before(now) {
			if !w.budgetSpent(c.Attempts + 1) {
				redrive = append(redrive, c)
				continue
			}
			return w.giveUp(ctx, run, fmt.Sprintf("tool call %s (%s) was claimed %d times without finishing", c.ID, c.Tool, c.Attempts))
		}
	}
	for _, c := range w.dispatchable(run, calls) {
		if now.Sub(c.UpdatedAt) >= w.settings.DispatchTimeout.Duration {
			redrive = append(redrive, c)
		}
	}
	return w.publishCalls(redrive)
}
