package stepworker

import (
	"context"
	"errors"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/store"
	"github.com/stepwise-run/stepwise/topics"
)

// publishOutcomes publishes the decision outcomes and approval requests
// waiting in the run's outbox, oldest first (publishClaimed), then deletes
// them. The scripts that apply, hold or reject a decision write its
// outcome in the same step, and those that park a call its approval
// request; publishing them is level-triggered like the rest of reconcile. The outbox is claimed for a lease first, so two reconciles of
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

// publishClaimed publishes outbox entries claimed for this worker (by
// ClaimOutcomes, or with a snapshot), in order: a decision's outcome on
// decision-outcomes, an approval request on approval-requests
// (publishApproval); then deletes them from the outbox.
func (w *Worker) publishClaimed(ctx context.Context, runID string, pending []store.Outcome) error {
	if len(pending) == 0 {
		return nil
	}
	for _, o := range pending {
		if o.AsksApproval() {
			if err := w.publishApproval(ctx, o); err != nil {
				return err
			}
			continue
		}
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

// publishApproval publishes the approval request o as ApprovalRequested,
// built from the run and the call as they are now, with the parking o
// names (store.Approval) and the arguments its args_hash hashes. A request over the broker's size limit goes out
// without the call's arguments and the run's metadata (ArgumentsOmitted,
// MetadataOmitted); one too large even so, or whose run, call or parking
// is gone (the run expired), is logged and deleted with the rest (ADR
// 0055): the call stays listed at GET /v1/pending.
func (w *Worker) publishApproval(ctx context.Context, o store.Outcome) error {
	run, c, err := w.store.Approval(ctx, o)
	if errors.Is(err, store.ErrNotFound) {
		w.log.Warn("approval request not published: its call is gone", "run_id", o.RunID, "call_id", o.CallID, "error", err)
		return nil
	}
	if err != nil {
		return err
	}
	p := *c.Parking
	args := c.Arguments
	if len(c.OrigArgs) > 0 {
		// A pass_decision_to_tool resume replaced them since: the request
		// carries those its args_hash hashes.
		if h, err := pipeline.ArgsHash(c.OrigArgs); err == nil && h == p.ArgsHash {
			args = c.OrigArgs
		}
	}
	m := topics.ApprovalRequested{
		Header: topics.Header{RunID: run.ID}, CallID: c.ID, Step: c.Step, Tool: c.Tool, Arguments: args,
		ArgsHash: p.ArgsHash, Ticket: p.Ticket, Reason: p.Reason, ResumeMode: p.ResumeMode,
		Deadline: topics.Time(p.Deadline), OnTimeout: p.OnTimeout, ParkedAt: topics.Time(p.ParkedAt),
		Agent: run.Agent, Tenant: run.Tenant, Metadata: run.Metadata,
	}
	err = topics.PublishTraced(w.pub, w.names.ApprovalRequests(), m, run.Trace)
	if errors.Is(err, topics.ErrTooLarge) && len(m.Arguments)+len(m.Metadata) > 0 {
		w.log.Warn("approval request published without the arguments and metadata: too large with them",
			"run_id", run.ID, "call_id", c.ID, "error", err)
		m.ArgumentsOmitted, m.MetadataOmitted = len(m.Arguments) > 0, len(m.Metadata) > 0
		m.Arguments, m.Metadata = nil, nil
		err = topics.PublishTraced(w.pub, w.names.ApprovalRequests(), m, run.Trace)
	}
	switch {
	case errors.Is(err, topics.ErrTooLarge):
		w.log.Error("approval request not published: too large", "run_id", run.ID, "call_id", c.ID, "error", err)
	case err != nil:
		return err
	default:
		w.metrics.ApprovalRequested(c.Tool)
	}
	return nil
}
