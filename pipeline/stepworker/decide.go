package stepworker

import (
	"context"
	"errors"
	"fmt"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/store"
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
func (w *Worker) HandleDecision(msg *message.Message) error {
	d, err := topics.Decode[topics.Decision](msg.Payload)
	if err != nil {
		return err
	}
	ctx := msg.Context()
	if d.Action == topics.ActionCancelRun {
		return w.cancelRun(ctx, d)
	}
	err = w.decide(ctx, d.RunID, store.Decision{
		ID: d.DecisionID, CallID: d.CallID, Action: d.Action, Payload: d.Payload,
		ArgsHash: d.ArgsHash, DecidedBy: d.DecidedBy, Reason: d.Reason,
	})
	if errors.Is(err, store.ErrNotFound) {
		return topics.Permanent(fmt.Errorf("decision %s: %w", d.DecisionID, err))
	}
	return err
}

// decide applies one decision and carries out its effect.
func (w *Worker) decide(ctx context.Context, runID string, d store.Decision) error {
	now := w.now()
	res, err := w.store.ApplyDecision(ctx, runID, d, now.Add(w.settings.DecisionHold.Duration), now)
	if err != nil {
		return err
	}
	log := w.log.With("run_id", runID, "call_id", d.CallID, "decision_id", d.ID)
	if res.Outcome != store.DecisionApplied {
		log.Info("decision not applied", "outcome", res.Outcome, "reason", res.Reason)
		if res.Outcome == store.DecisionHeld {
			return w.store.ScheduleSweep(ctx, runID, now.Add(w.settings.DecisionHold.Duration))
		}
		return nil
	}
	if err := w.store.ScheduleSweep(ctx, runID, now.Add(w.settings.Lease.Duration)); err != nil {
		return err
	}
	if res.Call.Status == pipeline.CallResuming {
		if agent, _ := w.cfg.Agent(res.Run.Agent); !agent.Sequential() {
			return w.publishCalls([]pipeline.ToolCall{res.Call})
		}
	}
	calls, err := w.store.StepCalls(ctx, runID, res.Run.Step)
	if err != nil {
		return err
	}
	return w.advance(ctx, res.Run, calls)
}

// releaseHeld applies the decisions held for calls of the step that have
// parked since they arrived, and returns the run and calls as they are then.
func (w *Worker) releaseHeld(ctx context.Context, run pipeline.Run, calls []pipeline.ToolCall) (pipeline.Run, []pipeline.ToolCall, error) {
	parked := map[string]bool{}
	for _, c := range calls {
		if c.Status == pipeline.CallSuspended {
			parked[c.ID] = true
		}
	}
	if len(parked) == 0 {
		return run, calls, nil
	}
	held, err := w.store.HeldDecisions(ctx, run.ID)
	if err != nil || len(held) == 0 {
		return run, calls, err
	}
	applied := false
	for _, h := range held {
		if !parked[h.Decision.CallID] {
			continue
		}
		now := w.now()
		res, err := w.store.ApplyDecision(ctx, run.ID, h.Decision, h.Until, now)
		if err != nil {
			return run, calls, err
		}
		if res.Outcome == store.DecisionApplied {
			applied = true
			run = res.Run
		}
	}
	if !applied {
		return run, calls, nil
	}
	calls, err = w.store.StepCalls(ctx, run.ID, run.Step)
	if err != nil {
		return run, calls, err
	}
	if agent, _ := w.cfg.Agent(run.Agent); !agent.Sequential() {
		err = w.dispatch(ctx, run, calls)
	}
	return run, calls, err
}

// cancelRun ends a run cancelled, from whatever status it is in; its
// suspended and running calls are cancelled with it.
func (w *Worker) cancelRun(ctx context.Context, d topics.Decision) error {
	by := d.DecidedBy
	if by == "" {
		by = "someone"
	}
	run, err := w.store.CancelRun(ctx, d.RunID, by, d.Reason, w.now())
	switch {
	case errors.Is(err, store.ErrNotFound):
		return topics.Permanent(fmt.Errorf("cancel of run %s: %w", d.RunID, err))
	case errors.Is(err, store.ErrStale):
		w.log.Info("cancel of a run that is already done", "run_id", d.RunID, "decision_id", d.DecisionID)
		return nil
	case err != nil:
		return err
	}
	// A waiting run may be off the sweeper's list: put it back, so the
	// result goes out even if this worker dies before publishing it.
	if err := w.store.ScheduleSweep(ctx, run.ID, w.now().Add(w.settings.Lease.Duration)); err != nil {
		return err
	}
	return w.publishResult(run)
}

// dropHeld rejects the decisions still held for calls that did not park,
// saying why (past the hold window, or the run ended first).
func (w *Worker) dropHeld(ctx context.Context, runID string, expired func(store.HeldDecision) bool, why string) error {
	held, err := w.store.HeldDecisions(ctx, runID)
	if err != nil {
		return err
	}
	for _, h := range held {
		if !expired(h) {
			continue
		}
		reason := fmt.Sprintf("call %s did not park %s", h.Decision.CallID, why)
		if err := w.store.DropHeld(ctx, runID, h.Decision.CallID, h.Decision.ID, reason, w.now()); err != nil {
			return err
		}
	}
	return nil
}
