package stepworker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/store"
	"github.com/stepwise-run/stepwise/pipeline/versions"
	"github.com/stepwise-run/stepwise/topics"
)

// budgetSpent reports whether a step claimed attempts times has used up the
// retry budget (stepworker.max_attempts).
func (w *Worker) budgetSpent(attempts int) bool {
	return attempts > w.settings.MaxAttempts
}

// callBudgetSpent is budgetSpent for a call of tool: its max_attempts when it
// sets one.
func (w *Worker) callBudgetSpent(ver *versions.Version, tool string, attempts int) bool {
	if t, ok := ver.Tool(tool); ok && t.MaxAttempts > 0 {
		return attempts > t.MaxAttempts
	}
	return w.budgetSpent(attempts)
}

// giveUp ends the run with reason error and the detail, and publishes its
// result.
func (w *Worker) giveUp(ctx context.Context, run pipeline.Run, detail string) error {
	return w.finish(ctx, run, pipeline.Termination{Reason: pipeline.ReasonError, Detail: detail})
}

// finish is the one way a run ends outside StepEnd; RunEnd and the result
// follow through the reconcile. A run that someone else ended first is
// theirs to publish (or the sweeper's, if they died).
func (w *Worker) finish(ctx context.Context, run pipeline.Run, t pipeline.Termination) error {
	next, err := w.finishFrom(ctx, run, t)
	if err != nil {
		return err
	}
	return w.reconcileFrom(ctx, next)
}

// giveUpFrom is giveUp inside a reconcile: it returns the state to go on
// from.
func (w *Worker) giveUpFrom(ctx context.Context, run pipeline.Run, detail string) (*view, error) {
	return w.finishFrom(ctx, run, pipeline.Termination{Reason: pipeline.ReasonError, Detail: detail})
}

func (w *Worker) finishFrom(ctx context.Context, run pipeline.Run, t pipeline.Termination) (*view, error) {
	t.Detail = w.redact.String(t.Detail) // a provider's error may quote what it was sent
	done, err := w.store.FinishRun(ctx, run.ID, t, w.now())
	if errors.Is(err, store.ErrStale) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("finish run %s: %w", run.ID, err)
	}
	return &view{Snapshot: store.Snapshot{Run: done}, written: true}, nil
}

// publishResult is RunEnd: once the run's end is done (endRun), it
// archives the run (runs.archive, which starts its retention), publishes
// the done run's outcome to run-results, then marks it published (which
// takes the run off the schedule). Until the mark the run stays
// scheduled, and the next reconcile does what is left of its end and
// archives and publishes again: the archive and the result go out at
// least once, and consumers dedupe by run_id. A result too large for the
// broker goes out without the run's metadata (MetadataOmitted); one too
// large even so is logged and not tried again (ADR 0050).
func (w *Worker) publishResult(ctx context.Context, snap store.Snapshot) error {
	run := snap.Run
	if done, err := w.endRun(ctx, snap); !done || err != nil {
		return err
	}
	if w.archive != nil {
		if err := w.archive.Archive(ctx, run.ID); err != nil {
			return err // the run stays scheduled, kept for good; the next reconcile archives it
		}
	}
	var t pipeline.Termination
	if run.Termination != nil {
		t = *run.Termination
	}
	res := topics.RunResult{
		Header: topics.Header{RunID: run.ID}, Agent: run.Agent, Status: run.Status,
		Step: run.Step, Termination: t, Usage: run.Usage, Metadata: run.Metadata, BatchID: run.Batch,
	}
	err := topics.PublishTraced(w.pub, w.names.RunResults(), res, run.Trace)
	if errors.Is(err, topics.ErrTooLarge) && len(res.Metadata) > 0 {
		w.log.Warn("run result published without its metadata: too large with it", "run_id", run.ID, "error", err)
		res.Metadata, res.MetadataOmitted = nil, true
		err = topics.PublishTraced(w.pub, w.names.RunResults(), res, run.Trace)
	}
	switch {
	case errors.Is(err, topics.ErrTooLarge): // no retry mends it: the run is marked as published all the same
		w.log.Error("run result not published: too large", "run_id", run.ID, "error", err)
	case err != nil:
		return err // the run stays scheduled; the next reconcile publishes again
	default:
		w.metrics.RunResult(string(t.Reason))
	}
	return w.store.MarkPublished(ctx, run, w.now())
}

// endRun does what must precede a done run's result, from the run's state
// (ADR 0053): it rejects the decisions still held, publishes every
// decision outcome waiting in the run's outbox, tells a child's parent its
// answer (tellParent), cancels a parent's children that are not done
// (cancelChildren), settles the budget holds its steps left
// (settleHolds), and runs RunEnd, once per run (runEnd).
// An error leaves the rest to the next reconcile, as does a result of
// false: the outbox is being published by another reconcile (or one that
// died, until its claim runs out), or a RunEnd hook failed. A hook that
// keeps failing is given up, and the result published without it, once
// the run has been done for stepworker.max_attempts leases.
func (w *Worker) endRun(ctx context.Context, snap store.Snapshot) (bool, error) {
	run := snap.Run
	if err := w.dropHeld(ctx, snap); err != nil {
		return false, err
	}
	if drained, err := w.drainOutcomes(ctx, run.ID); !drained || err != nil {
		return false, err
	}
	if run.ParentRunID != "" {
		if err := w.tellParent(ctx, run); err != nil {
			return false, err
		}
	}
	if len(run.Children) > 0 {
		if err := w.cancelChildren(ctx, run); err != nil {
			return false, err
		}
	}
	if len(w.budgetsOf(run)) > 0 {
		holds, err := w.store.Holds(ctx, run.ID)
		if err == nil {
			err = w.settleHolds(ctx, run, holds)
		}
		if err != nil {
			return false, err
		}
	}
	err := w.runEnd(ctx, run)
	if err == nil {
		return true, nil
	}
	if w.now().Sub(run.UpdatedAt) >= time.Duration(w.settings.MaxAttempts)*w.settings.Lease.Duration {
		w.log.Error("RunEnd hooks keep failing; the result is published without them", "run_id", run.ID, "error", err)
		return true, nil
	}
	w.log.Warn("RunEnd hooks failed; the sweeper runs them again before the result", "run_id", run.ID, "error", err)
	return false, nil
}

// dropHeld rejects the decisions still held when the run ended: their
// calls will never park. A snapshot of the done run that read them says
// which they are (none can be held once the run is done); otherwise they
// are read. The rejections' outcomes go out with the rest of the outbox
// (endRun).
func (w *Worker) dropHeld(ctx context.Context, snap store.Snapshot) error {
	runID, held := snap.Run.ID, snap.Held
	if !snap.HeldKnown {
		var err error
		if held, err = w.store.HeldDecisions(ctx, runID); err != nil {
			return err
		}
	}
	if len(held) == 0 {
		return nil
	}
	for _, h := range held {
		reason := fmt.Sprintf("call %s did not park before the run ended", h.CallID)
		err := w.store.DropHeld(ctx, runID, h.CallID, h.ID, reason, w.now())
		if err != nil && !errors.Is(err, store.ErrStale) {
			return err
		}
	}
	return nil
}
