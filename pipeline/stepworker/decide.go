package stepworker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"go.opentelemetry.io/otel/attribute"
	oteltrace "go.opentelemetry.io/otel/trace"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/store"
	"github.com/stepwise-run/stepwise/pipeline/tracing"
	"github.com/stepwise-run/stepwise/topics"
)

// HandleDecision handles a message of the decisions topic, from the gateway
// or from any outside producer. A decision for a call is applied the moment
// it arrives, whatever else of the step still runs: a resume re-publishes
// the call (replay, pass_decision_to_tool) or completes it
// (use_decision_as_result); a cancel ends the call and the model is told.
// The store refuses what does not fit — a repeated decision_id (no-op), a
// call that is not suspended, a done run, an args_hash that does not match —
// and records each refusal in the run's events. A decision for a call that
// has not parked yet is held and applied when it parks. cancel_run ends the
// whole run. A decision for an unknown run goes to the dead-letter topic.
//
// Whatever the outcome, a duplicate included, the run is rescheduled and
// reconciled, on the pool once the decision is applied, so the partition's
// next decision does not wait for it: a decision redelivered after its
// first handler died between applying it and publishing the resumed call
// publishes it now; a handler that dies after the decision was
// acknowledged leaves the run scheduled for the sweeper, a lease later.
//
// With decisions.require_signature, a decision whose signature does not
// verify is refused first (outcome rejected, reason "signature"), before
// it touches the run; one that verifies is recorded as signed by its
// producer (signed_by), beside the decided_by it claims. A producer bound
// to a tenant decides only that tenant's runs: another's reads as an
// unknown run.
func (w *Worker) HandleDecision(msg *message.Message) error {
	d, err := topics.Decode[topics.Decision](msg.Payload)
	if err != nil {
		return err
	}
	signedBy := "" // the producer whose key verified d; none when signatures are not checked
	if w.signers != nil {
		if err := topics.VerifySignature(msg.Payload, w.signers); err != nil {
			// Refused before it touches the run: a forged decision must
			// not use up its decision_id. Acknowledged, not dead-lettered:
			// it is not to be re-driven.
			w.log.Warn("decision refused: signature", "run_id", d.RunID, "decision_id", d.DecisionID, "producer", d.Producer, "error", err)
			return w.publishOutcome(topics.DecisionOutcome{
				Header: topics.Header{RunID: d.RunID}, DecisionID: d.DecisionID, CallID: d.CallID,
				Outcome: topics.OutcomeRejected, Reason: "signature",
			})
		}
		signedBy = d.Producer
	}
	ctx, span := tracing.Start(msg.Context(), tracing.FromMessage(msg), oteltrace.SpanKindConsumer, func() (string, []attribute.KeyValue) {
		return "decision " + d.Action, []attribute.KeyValue{tracing.RunID(d.RunID), tracing.CallID(d.CallID),
			attribute.String("stepwise.decision_id", d.DecisionID)}
	})
	defer span.End()
	switch err = w.ownedBySigner(ctx, d.RunID, signedBy); {
	case err != nil:
	case d.Action == topics.ActionCancelRun:
		err = w.cancelRun(ctx, d, signedBy)
	default:
		err = w.decide(ctx, d, signedBy)
	}
	tracing.Fail(span, err)
	if errors.Is(err, store.ErrNotFound) {
		// No run, no outbox: say so straight, then dead-letter the decision.
		if perr := w.publishOutcome(topics.DecisionOutcome{
			Header: topics.Header{RunID: d.RunID}, DecisionID: d.DecisionID, CallID: d.CallID,
			Outcome: topics.OutcomeRejected, Reason: "run not found",
		}); perr != nil {
			return perr
		}
		return topics.Permanent(fmt.Errorf("decision %s: %w", d.DecisionID, err))
	}
	return err
}

// ownedBySigner checks that a decision verified as signed by signedBy
// ("" when signatures are not checked) may decide run runID: a producer
// bound to a tenant decides only that tenant's runs, and another
// tenant's run is to it as a run that does not exist (ErrNotFound), as it
// is to an API key over HTTP.
func (w *Worker) ownedBySigner(ctx context.Context, runID, signedBy string) error {
	bound := w.tenants[signedBy]
	if signedBy == "" || bound == "" {
		return nil
	}
	tenant, _, err := w.store.RunOwner(ctx, runID)
	if err == nil && tenant != bound {
		err = fmt.Errorf("%w: run %s is not tenant %s's", store.ErrNotFound, runID, bound)
	}
	return err
}

// decide applies one decision, signed by signedBy ("" when not checked),
// then reconciles the run on the decisions' pool.
func (w *Worker) decide(ctx context.Context, d topics.Decision, signedBy string) error {
	sd, before, err := w.prepare(ctx, d, signedBy)
	if err != nil {
		return err
	}
	slot, err := w.decided.Take(ctx) // before the write: a full pool holds the partition back
	if err != nil {
		return err // stopping: the message comes back to whoever owns the partition next
	}
	res, after, err := w.apply(ctx, d, sd, before)
	if err != nil {
		slot.Release()
		return err
	}
	slot.Go(func() { w.afterDecision(d, res, after) })
	return nil
}

// decideHere is decide for a decision stepwise makes itself (a child
// run's answer): applied and reconciled by the caller, not on the
// decisions' pool, which the caller may hold.
func (w *Worker) decideHere(ctx context.Context, d topics.Decision) error {
	sd, before, err := w.prepare(ctx, d, "")
	if err != nil {
		return err
	}
	res, after, err := w.apply(ctx, d, sd, before)
	if err != nil {
		return err
	}
	w.afterDecision(d, res, after)
	return nil
}

// prepare is d as the store applies it, checked (ToolGate for a resume)
// and with the run scheduled before the write at the time it returns.
func (w *Worker) prepare(ctx context.Context, d topics.Decision, signedBy string) (store.Decision, time.Time, error) {
	before := w.sweepAt(time.Time{})
	sd := store.Decision{
		ID: d.DecisionID, CallID: d.CallID, Action: d.Action, Payload: d.Payload,
		ArgsHash: d.ArgsHash, DecidedBy: d.DecidedBy, SignedBy: signedBy, Reason: d.Reason,
	}
	if sd.Action == store.ActionResume { // read what the resume is checked against, and schedule
		run, call, err := w.store.ResumeTarget(ctx, d.RunID, d.CallID, before)
		if err != nil {
			return sd, before, err
		}
		ver, err := w.versionOf(ctx, run)
		if lostVersion(err) {
			// The run cannot go on: it ends with the error, and the
			// decision finds it done.
			return sd, before, w.giveUp(ctx, run, err.Error())
		}
		if err == nil {
			ver, sd.Upgrade, err = w.upgradeOf(ctx, run, ver)
		}
		if err != nil {
			return sd, before, err
		}
		w.checkResume(ctx, ver, call, &sd)
		if !ver.Agent.Sequential() {
			sd.Dispatcher = w.instance // a resumed call of a parallel step is published at once
		}
	} else if err := w.store.ScheduleSweep(ctx, d.RunID, before); err != nil {
		return sd, before, err
	}
	return sd, before, nil
}

// apply writes the prepared decision sd and returns what became of it and
// when the run is scheduled after it.
func (w *Worker) apply(ctx context.Context, d topics.Decision, sd store.Decision, before time.Time) (store.DecisionResult, time.Time, error) {
	now := w.now()
	res, err := w.store.ApplyDecisionFirst(ctx, d.RunID, sd, now.Add(w.settings.DecisionHold.Duration), now)
	if err != nil {
		return res, before, err
	}
	if res.Outcome != store.DecisionApplied {
		w.log.Info("decision not applied", "run_id", d.RunID, "call_id", d.CallID, "decision_id", d.DecisionID,
			"outcome", res.Outcome, "reason", res.Reason)
	}
	return res, w.sweepAt(before), nil
}

// afterDecision reconciles the run of an applied (or refused, or held)
// decision, on the decisions' pool (not the inference pool: it runs no
// inference, and must not wait behind slow models), so that the decision's
// partition goes on to its next message: the decision's writes to the global indexes and the
// reconcile's read share a round trip (ReadAfterDecision). It publishes the
// calls this worker marked as being sent (mine: the decision's resumed
// call among them); when it fails, it takes the decision's mark back, so
// another reconcile publishes the call, and leaves the run to the sweeper,
// which finds it at its first schedule.
func (w *Worker) afterDecision(d topics.Decision, res store.DecisionResult, sweepAt time.Time) {
	ctx := w.ctx
	snap, err := w.store.ReadAfterDecision(ctx, d.RunID, d.CallID, res, sweepAt,
		w.settings.Lease.Duration, w.now())
	if err == nil {
		err = w.reconcileFrom(ctx, &view{Snapshot: snap, mine: true})
	}
	if err == nil {
		return
	}
	if res.Call.DispatchedBy == w.instance {
		w.unsent.add(d.RunID, []pipeline.ToolCall{res.Call})
		w.unsent.clear(ctx, w.store, w.log)
	}
	if !errors.Is(err, store.ErrNotFound) {
		w.log.Error("reconcile after a decision; the sweeper will", "run_id", d.RunID, "decision_id", d.DecisionID, "error", err)
	}
}

// cancelRun ends a run cancelled, from whatever status it is in; its
// suspended and running calls are cancelled with it, and its inference on
// this worker stops, freeing its pool slot. Who cancelled it is the
// decision's decided_by, followed by "(signed by <producer>)" when a
// producer's key verified it and that is not the name it claims. A cancel
// of a run already done reconciles it all the same: its result may be
// unpublished.
func (w *Worker) cancelRun(ctx context.Context, d topics.Decision, signedBy string) error {
	by := cmp.Or(d.DecidedBy, "someone")
	if signedBy != "" && signedBy != d.DecidedBy {
		by += " (signed by " + signedBy + ")"
	}
	before, err := w.schedule(ctx, d.RunID, time.Time{})
	if err != nil {
		return err
	}
	run, err := w.store.CancelRun(ctx, d.RunID, d.DecisionID, by, d.Reason, w.now())
	if err == nil || errors.Is(err, store.ErrStale) {
		w.inferring.Stop(d.RunID, errRunEnded) // its slot is free for the next step now
	}
	if errors.Is(err, store.ErrStale) {
		w.log.Info("cancel of a run that is already done", "run_id", d.RunID, "decision_id", d.DecisionID)
		return w.rescheduleAndReconcile(ctx, d.RunID, before)
	}
	if err != nil {
		return err
	}
	if _, err := w.schedule(ctx, d.RunID, before); err != nil {
		return err
	}
	if err := w.publishOutcomes(ctx, d.RunID); err != nil {
		return err
	}
	return w.reconcileFrom(ctx, &view{Snapshot: store.Snapshot{Run: run}, written: true})
}

// A decision may take a run out of waiting, where it can be off the
// schedule. So the run is scheduled before the write (a worker that dies
// after it leaves a run the sweeper will look at) and again after it (a
// reconcile that read the run waiting and takes it off the schedule only
// if its sweep time is unchanged then finds it changed), then reconciled.
// schedule sets the sweep at sweepAt(after).
func (w *Worker) schedule(ctx context.Context, runID string, after time.Time) (time.Time, error) {
	at := w.sweepAt(after)
	return at, w.store.ScheduleSweep(ctx, runID, at)
}

// sweepAt is one lease from now, and always later than after, so the
// second schedule differs from the first even within a millisecond.
func (w *Worker) sweepAt(after time.Time) time.Time {
	at := w.now().Add(w.settings.Lease.Duration)
	if !at.After(after) {
		at = after.Add(time.Millisecond)
	}
	return at
}

func (w *Worker) rescheduleAndReconcile(ctx context.Context, runID string, before time.Time) error {
	if _, err := w.schedule(ctx, runID, before); err != nil {
		return err
	}
	return w.reconcile(ctx, runID)
}
