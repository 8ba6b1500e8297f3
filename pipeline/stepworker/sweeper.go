package stepworker

import (
	"context"
	"fmt"
	"time"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/config"
	"github.com/stepwise-run/stepwise/pipeline/store"
	"github.com/stepwise-run/stepwise/topics"
)

// SweepBatch is how many due runs the sweeper takes at once, and
// SweepBatches how many batches one sweep takes at most (a bound, so a run
// that keeps coming due at once cannot hold a sweep forever).
const (
	SweepBatch   = 256
	SweepBatches = 64
)

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

// Sweep looks at the runs that are due and re-drives what went missing: a
// step request nobody took, a step or call whose lease ran out (its worker
// died), a result nobody fanned in or published. It takes due runs in
// batches of SweepBatch until none is left (each batch is this worker's
// alone), so thousands of active runs do not fall behind. It returns how
// many runs it looked at. Every runnable run is looked at again within one
// lease period, so a dead worker's work is re-driven within about two.
func (w *Worker) Sweep(ctx context.Context) (int, error) {
	swept := 0
	for batch := 0; batch < SweepBatches && ctx.Err() == nil; batch++ {
		now := w.now()
		ids, err := w.store.DueRuns(ctx, now, SweepBatch, now.Add(w.settings.Lease.Duration))
		if err != nil {
			return swept, fmt.Errorf("due runs: %w", err)
		}
		for _, id := range ids {
			if err := w.sweepRun(ctx, id, now); err != nil {
				w.log.Error("sweep run", "run_id", id, "error", err)
			}
		}
		swept += len(ids)
		if len(ids) < SweepBatch {
			break
		}
	}
	return swept, nil
}

func (w *Worker) sweepRun(ctx context.Context, id string, now time.Time) error {
	run, err := w.store.GetRun(ctx, id)
	if err != nil {
		return err
	}
	if run.Status.Final() {
		if !run.Published {
			return w.publishResult(run) // its publisher died before marking it
		}
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
		if err := w.sweepDecisions(ctx, run, calls, now); err != nil {
			return err
		}
		if run.Status == pipeline.RunWaiting {
			return w.scheduleWaiting(ctx, run, now)
		}
		return w.sweepCalls(ctx, run, calls, now)
	}
	return nil
}

// sweepDecisions applies the on_timeout decision of every suspended call
// whose approval deadline has passed (recorded as a timeout, not as
// somebody's decision), and rejects decisions held past their hold window
// for a call that never parked.
func (w *Worker) sweepDecisions(ctx context.Context, run pipeline.Run, calls []pipeline.ToolCall, now time.Time) error {
	for _, c := range calls {
		if c.Status != pipeline.CallSuspended || c.Parking == nil || c.Parking.Deadline.IsZero() || c.Parking.Deadline.After(now) {
			continue
		}
		action := topics.ActionCancel
		if c.Parking.OnTimeout == config.OnTimeoutResume {
			action = topics.ActionResume
		}
		waited := c.Parking.Deadline.Sub(c.Parking.ParkedAt).Round(time.Second)
		if err := w.decide(ctx, run.ID, store.Decision{
			ID: "timeout:" + c.ID, CallID: c.ID, Action: action, DecidedBy: "stepwise",
			Reason: fmt.Sprintf("no decision within %s", waited), Timeout: true,
		}); err != nil {
			return err
		}
	}
	return w.dropHeld(ctx, run.ID, func(h store.HeldDecision) bool { return !h.Until.After(now) },
		fmt.Sprintf("within %s of the decision", w.settings.DecisionHold.Duration))
}

// scheduleWaiting sets when the sweeper next looks at a waiting run: at its
// earliest approval deadline or held decision's expiry, or never (a
// decision wakes it) when it has neither.
func (w *Worker) scheduleWaiting(ctx context.Context, run pipeline.Run, now time.Time) error {
	run, err := w.store.GetRun(ctx, run.ID)
	if err != nil || run.Status != pipeline.RunWaiting {
		return err // resumed meanwhile: DueRuns already set the next look
	}
	calls, err := w.store.StepCalls(ctx, run.ID, run.Step)
	if err != nil {
		return err
	}
	var next time.Time
	earliest := func(t time.Time) {
		if !t.IsZero() && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	for _, c := range calls {
		if c.Status == pipeline.CallSuspended && c.Parking != nil {
			earliest(c.Parking.Deadline)
		}
	}
	held, err := w.store.HeldDecisions(ctx, run.ID)
	if err != nil {
		return err
	}
	for _, h := range held {
		earliest(h.Until)
	}
	if next.IsZero() {
		return w.store.Unschedule(ctx, run.ID)
	}
	return w.store.ScheduleSweep(ctx, run.ID, next)
}

func (w *Worker) sweepCalls(ctx context.Context, run pipeline.Run, calls []pipeline.ToolCall, now time.Time) error {
	if pipeline.DeriveRunStatus(pipeline.CallStatuses(calls)) == pipeline.RunDone {
		return w.endStep(ctx, run, calls) // the last result's fan-in went missing
	}
	var redrive []pipeline.ToolCall
	for _, c := range calls {
		if c.Status == pipeline.CallRunning && c.LeaseUntil.Before(now) {
			if !w.callBudgetSpent(c.Tool, c.Attempts+1) {
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
