package stepworker

import (
	"context"

	"github.com/stepwise-run/stepwise/pipeline/store"
	"github.com/stepwise-run/stepwise/topics"
)

// publishOutcomes publishes the decision outcomes waiting in the run's
// outbox to the decision-outcomes topic, oldest first, then deletes them.
// The scripts that apply, hold or reject a decision write its outcome in
// the same step; publishing them is level-triggered like the rest of
// reconcile. The outbox is claimed for a lease first, so two reconciles of
// the run do not both publish an outcome; a worker that dies before the
// delete leaves them to the next reconcile after the lease (the
// redelivered decision's, or the sweeper's), which publishes them again.
func (w *Worker) publishOutcomes(ctx context.Context, runID string) error {
	pending, err := w.store.ClaimOutcomes(ctx, runID, w.settings.Lease.Duration, w.now())
	if err != nil {
		return err
	}
	return w.publishClaimed(ctx, runID, pending)
}

// drainOutcomes publishes every decision outcome waiting in the run's
// outbox, a batch at a time, for a run whose result may follow only once
// they are out. It reports false, with nothing done, when another
// reconcile holds the outbox's claim: that one publishes them, or, if it
// died, the run's next reconcile after the claim runs out.
func (w *Worker) drainOutcomes(ctx context.Context, runID string) (bool, error) {
	for {
		waiting, err := w.store.Outcomes(ctx, runID)
		if err != nil || len(waiting) == 0 {
			return err == nil, err
		}
		claimed, err := w.store.ClaimOutcomes(ctx, runID, w.settings.Lease.Duration, w.now())
		if err != nil || len(claimed) == 0 {
			return false, err
		}
		if err := w.publishClaimed(ctx, runID, claimed); err != nil {
			return false, err
		}
	}
}

// publishClaimed publishes outcomes claimed for this worker (by
// ClaimOutcomes, or with a snapshot) and deletes them from the outbox.
func (w *Worker) publishClaimed(ctx context.Context, runID string, pending []store.Outcome) error {
	if len(pending) == 0 {
		return nil
	}
	for _, o := range pending {
		if err := w.publishOutcome(topics.DecisionOutcome{
			Header: topics.Header{RunID: runID}, DecisionID: o.DecisionID, CallID: o.CallID,
			Outcome: string(o.Outcome), Reason: o.Reason,
		}); err != nil {
			return err
		}
	}
	return w.store.OutcomesSent(ctx, runID, pending)
}

// publishOutcome publishes one outcome; straight, for a decision that
// reaches no run's outbox (its run does not exist, or its signature fails).
func (w *Worker) publishOutcome(o topics.DecisionOutcome) error {
	if err := topics.Publish(w.pub, w.names.DecisionOutcomes(), o); err != nil {
		return err
	}
	w.metrics.Outcome(o.Outcome)
	return nil
}
