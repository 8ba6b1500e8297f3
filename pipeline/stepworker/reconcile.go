package stepworker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/config"
	"github.com/stepwise-run/stepwise/pipeline/store"
	"github.com/stepwise-run/stepwise/pipeline/versions"
	"github.com/stepwise-run/stepwise/topics"
)

// reconcileRounds bounds one reconcile. Each round acts on the state the
// last one left; a step ends in at most a handful (apply held decisions,
// end the step, request the next), so reaching the bound means the run
// keeps changing under it, and the sweeper comes back to it.
const reconcileRounds = 16

// reconcile brings a run forward from what Redis holds, whatever happened
// before: which messages were lost, which process died between which
// writes. It is level-triggered and idempotent, like a controller-runtime
// Reconcile: every handler calls it after its own write, also when that
// write was a duplicate or stale, and the sweeper calls it for every run
// that comes due.
//
// Each round does what the run's state asks for, then looks again:
//   - decision outcomes waiting in the run's outbox: publish them, delete
//     them (first, whatever else the run needs);
//   - a done run whose result is not marked published: RunEnd, publish it,
//     mark it (the result's outbox); a published one leaves the schedule;
//   - a pending step whose request is not marked sent: publish
//     StepRequested, mark it (the fan-in that ended the step before it
//     claims it and runs it instead, in its own pool slot: stepHere); a
//     step being inferred whose lease ran out
//     (its worker died): request it again — the claim counts the attempt;
//   - decisions held for calls that have parked since: apply them; held
//     past their hold: reject them; parked calls past their approval
//     deadline: apply their on_timeout;
//   - running calls whose lease ran out: publish them again, or end the
//     run once their retry budget is spent;
//   - then by derive_run_status of the calls ahead: running → start the
//     child runs of parked calls of agent tools not marked started
//     (startChildren), publish the dispatchable calls not marked
//     dispatched and mark them; waiting → set the run waiting, start those
//     child runs, see its parked calls in the pending indexes and
//     schedule the next look at its earliest deadline (none: off the
//     schedule, a decision wakes it); all terminal → StepEnd.
//
// A publish refused for its size (topics.ErrTooLarge) is refused again
// at every look: a run that is not done ends with reason error instead,
// the refusal its detail (ADR 0050).
//
// A message marked sent is published again only when its mark is older
// than stepworker.dispatch_timeout (a lease, for a claim that died): the
// marks keep a backlog in Kafka from being re-published on every
// reconcile. A result is published at once by the worker that ended the
// run; any other reconcile leaves it to that worker for a lease period, so
// a run ended without a fault has one result, not one per handler that
// happened to look.
func (w *Worker) reconcile(ctx context.Context, runID string) error {
	return w.reconcileRead(ctx, runID, false)
}

// reconcileRead reads the run and its step, one round trip, and
// reconciles from what it read. A fan-in's reconcile is one: it ends the
// step when every call is terminal (end_step reads the calls again and
// decides from what it reads). A reconcile that holds a slot of the
// inference pool (here) goes on with a step it ends in that slot
// (stepHere); one that does not requests it.
func (w *Worker) reconcileRead(ctx context.Context, runID string, here bool) error {
	snap, err := w.snapshot(ctx, runID)
	if err != nil {
		return err
	}
	return w.reconcileFrom(ctx, &view{Snapshot: snap, here: here})
}

// view is what a reconcile round looks at: a snapshot, whether this
// worker wrote the state it shows, whether the reconcile may run the run's
// next step in the caller's pool slot, and whether it publishes the calls
// this worker's commit marked as being sent (mine: the commit's own
// reconcile, the only one that knows they are not out yet).
type view struct {
	store.Snapshot
	written bool
	here    bool
	mine    bool
}

// reconcileFrom is reconcile from a view the caller has (nil: nothing to
// do).
func (w *Worker) reconcileFrom(ctx context.Context, v *view) error {
	if v == nil {
		return nil
	}
	for range reconcileRounds {
		next, err := w.reconcileOnce(ctx, *v, w.now())
		if errors.Is(err, topics.ErrTooLarge) && !v.Run.Status.Final() {
			// The same record would be refused at every look: the run
			// ends instead of waiting for a publish that never succeeds.
			next, err = w.giveUpFrom(ctx, v.Run, "a message of the run is too large to publish: "+err.Error())
		}
		if err != nil || next == nil {
			return err
		}
		next.here, next.mine = v.here, v.mine
		v = next
	}
	return fmt.Errorf("reconcile run %s: still changing after %d rounds; the sweeper will come back to it", v.Run.ID, reconcileRounds)
}

// reconcileCommitted reconciles a run whose step was just committed, from
// what the commit returned: with no call parked, the commit's view is all a
// round needs; a parked call needs the held decisions and the schedule, so
// the run is read again. A run the commit also ended (CommitAndEnd) comes
// with the decisions held when it ended. The calls the commit marked as
// being sent by this worker are published here; if the reconcile fails,
// their marks are taken back (unsent), so another reconcile publishes them.
func (w *Worker) reconcileCommitted(ctx context.Context, run pipeline.Run, calls []pipeline.ToolCall, held []store.HeldDecision) error {
	v := &view{Snapshot: store.Snapshot{Run: run, Calls: calls, Held: held, HeldKnown: run.Status.Final()}, written: true, mine: true}
	var err error
	for _, c := range calls {
		if c.Status == pipeline.CallSuspended {
			var snap store.Snapshot
			if snap, err = w.snapshot(ctx, run.ID); err == nil {
				v = &view{Snapshot: snap, mine: true}
			}
			break
		}
	}
	if err == nil {
		err = w.reconcileFrom(ctx, v)
	}
	if err != nil {
		w.unsent.add(run.ID, w.outgoing(calls))
		w.unsent.clear(ctx, w.store, w.log)
	}
	return err
}

// reconcileOnce does the first thing v asks for. It returns the state to
// look at next, or nil when the run needs nothing more now.
func (w *Worker) reconcileOnce(ctx context.Context, v view, now time.Time) (*view, error) {
	run := v.Run
	if err := w.publishClaimed(ctx, run.ID, v.Outcomes); err != nil {
		return nil, err
	}
	if run.Status.Final() {
		switch {
		case run.Published: // a crash between its mark and its retirement
			return nil, w.store.MarkPublished(ctx, run, now)
		case v.written || now.Sub(run.UpdatedAt) >= w.settings.Lease.Duration:
			return nil, w.publishResult(ctx, v.Snapshot)
		}
		return nil, nil // its writer publishes it; the sweeper, if the writer died
	}
	switch run.StepState {
	case pipeline.StepPending:
		if sentWithin(run.RequestedAt, now, w.settings.DispatchTimeout.Duration) || run.DeferUntil.After(now) || run.StartAt.After(now) {
			return nil, nil // requested; or deferred by a limit or its start_at, and the sweeper comes back then
		}
		if v.written && v.here {
			return nil, w.stepHere(ctx, run) // this worker just ended the step before it
		}
		if err := w.requestStep(run); err != nil {
			return nil, err
		}
		return nil, w.store.MarkRequested(ctx, run.ID, run.Step, now)
	case pipeline.StepInferring:
		if run.LeaseUntil.Before(now) {
			w.metrics.Redriven("step", 1) // a budget its worker held is settled by the next claim (settleHolds)
			return nil, w.requestStep(run)
		}
		return nil, nil
	case pipeline.StepTools:
		return w.reconcileTools(ctx, v, now)
	case pipeline.StepAwaitingInference:
		return nil, nil // its model's batcher answers it (batcher.go)
	}
	return nil, fmt.Errorf("run %s is in step state %q", run.ID, run.StepState)
}

// reconcileTools handles a committed step: decisions first, then expired
// leases, then whatever derive_run_status says.
func (w *Worker) reconcileTools(ctx context.Context, v view, now time.Time) (*view, error) {
	snap := v.Snapshot
	run, calls := snap.Run, snap.Calls
	ver, err := w.versionOf(ctx, run)
	if lostVersion(err) {
		return w.giveUpFrom(ctx, run, err.Error())
	}
	if err != nil {
		return nil, err
	}
	decided, err := w.applyDue(ctx, ver, snap, now)
	if err != nil {
		return nil, err
	}
	if decided {
		if run.Status == pipeline.RunWaiting {
			// The run may be running again: whoever moves it out of
			// waiting reschedules it, so no reconcile that read it
			// waiting can take it off the schedule (RescheduleWaiting).
			if err := w.store.ScheduleSweep(ctx, run.ID, now.Add(w.settings.Lease.Duration)); err != nil {
				return nil, err
			}
		}
		return w.reread(ctx, run)
	}

	var redrive []pipeline.ToolCall
	for _, c := range calls {
		if c.Status != pipeline.CallRunning || !c.LeaseUntil.Before(now) ||
			sentWithin(c.DispatchedAt, now, w.settings.Lease.Duration) {
			continue
		}
		if w.callBudgetSpent(ver, c.Tool, c.Attempts+1) {
			return w.giveUpFrom(ctx, run, fmt.Sprintf("tool call %s (%s) was claimed %d times without finishing", c.ID, c.Tool, c.Attempts))
		}
		redrive = append(redrive, c) // its worker died: the claim counts the attempt
	}
	w.metrics.Redriven("call", len(redrive))

	agent := ver.Agent
	switch pipeline.DeriveRunStatus(pipeline.CallStatuses(ahead(agent, calls))) {
	case pipeline.RunRunning:
		judged, err := w.regate(ctx, ver, run, calls, now)
		if pe := (*phaseError)(nil); errors.As(err, &pe) {
			return w.giveUpFrom(ctx, run, err.Error())
		}
		if err != nil {
			return nil, err
		}
		if judged {
			return w.reread(ctx, run)
		}
		if err := w.startChildren(ctx, ver, run, calls); err != nil {
			return nil, err
		}
		var fresh []pipeline.ToolCall // marked by this worker's commit, not published yet
		for _, i := range dispatchable(agent, calls) {
			switch c := calls[i]; {
			case v.mine && c.DispatchedBy == w.instance:
				fresh = append(fresh, c)
			case !w.dispatched(c, now):
				redrive = append(redrive, c)
			}
		}
		publish := fresh
		if len(redrive) > 0 {
			publish = append(slices.Clip(redrive), fresh...)
		}
		if err := w.publishCalls(run.Trace, publish); err != nil {
			return nil, err
		}
		return nil, w.store.MarkDispatched(ctx, run.ID, redrive, now)
	case pipeline.RunWaiting:
		if run.Status == pipeline.RunRunning {
			_, err := w.store.SetWaiting(ctx, run.ID, run.Step, agent.Sequential(), now)
			if errors.Is(err, store.ErrStale) {
				return nil, nil // a decision got in first; its handler reconciles
			}
			if err != nil {
				return nil, err
			}
		}
		// A waiting run's children start once it is set waiting, so a
		// child's answer finds it so.
		if err := w.startChildren(ctx, ver, run, calls); err != nil {
			return nil, err
		}
		// Its parked calls go in the pending indexes again, in case the
		// process that parked them died before it indexed them.
		_, err := w.store.RescheduleWaiting(ctx, run, calls, snap.Scheduled, nextLook(snap))
		return nil, err
	default:
		return w.endStep(ctx, ver, run, calls, v.here)
	}
}

// applyDue applies what is due to the step's parked calls: the decisions
// held for calls that have parked since they arrived, and the on_timeout
// decision of calls whose approval deadline has passed (recorded as a
// timeout, not as somebody's decision); and it rejects the decisions held
// past their hold. ver is the run's agent version the resumes are checked
// against (upgradeOf may move the run to the current one). It reports
// whether it changed anything.
func (w *Worker) applyDue(ctx context.Context, ver *versions.Version, snap store.Snapshot, now time.Time) (bool, error) {
	run := snap.Run
	ver, upgrade, err := w.upgradeOf(ctx, run, ver)
	if err != nil {
		return false, err
	}
	parked := map[string]bool{}           // the parked calls only: most steps have none
	var byID map[string]pipeline.ToolCall // for the held decisions: most runs hold none
	if len(snap.Held) > 0 {
		byID = make(map[string]pipeline.ToolCall, len(snap.Calls))
	}
	for _, c := range snap.Calls {
		if c.Status == pipeline.CallSuspended {
			parked[c.ID] = true
		}
		if byID != nil {
			byID[c.ID] = c
		}
	}
	changed := false
	for _, h := range snap.Held {
		switch {
		case parked[h.CallID]:
			d := h.Decision
			d.Upgrade = upgradeIf(d.Action, upgrade)
			w.checkResume(ctx, ver, byID[h.CallID], &d)
			if _, err := w.store.ApplyDecision(ctx, run.ID, d, h.Until, now); err != nil {
				return changed, err
			}
			parked[h.CallID] = false
		case !h.Until.After(now):
			reason := fmt.Sprintf("call %s did not park within %s of the decision", h.CallID, w.settings.DecisionHold.Duration)
			err := w.store.DropHeld(ctx, run.ID, h.CallID, h.ID, reason, now)
			if err != nil && !errors.Is(err, store.ErrStale) { // stale: applied or dropped meanwhile
				return changed, err
			}
		default:
			continue
		}
		changed = true
	}
	for _, c := range snap.Calls {
		if !parked[c.ID] || c.Parking == nil || c.Parking.Deadline.IsZero() || c.Parking.Deadline.After(now) {
			continue
		}
		action := topics.ActionCancel
		if c.Parking.OnTimeout == config.OnTimeoutResume {
			action = topics.ActionResume
		}
		waited := c.Parking.Deadline.Sub(c.Parking.ParkedAt).Round(time.Second)
		d := store.Decision{
			ID: TimeoutDecisionID(c.ID, c.Parking.ParkedAt), CallID: c.ID, Action: action, DecidedBy: "stepwise",
			Reason: fmt.Sprintf("no decision within %s", waited), Timeout: true, Upgrade: upgradeIf(action, upgrade),
		}
		w.checkResume(ctx, ver, c, &d)
		if _, err := w.store.ApplyDecision(ctx, run.ID, d, now, now); err != nil {
			return changed, err
		}
		changed = true
	}
	return changed, nil
}

// TimeoutDecisionID is the id of the decision the sweeper applies when
// the approval deadline of call's parking at parkedAt passes:
// timeout:<call id>@<parked_at in unix ms>. One per parking, so a call
// parked again (its tool parks it after an on_timeout resume) times out
// again rather than reading as a duplicate of its first timeout.
func TimeoutDecisionID(callID string, parkedAt time.Time) string {
	return fmt.Sprintf("timeout:%s@%d", callID, parkedAt.UnixMilli())
}

// nextLook is when the sweeper must next look at a waiting run: its
// earliest approval deadline, end of a hold, or end of another reader's
// claim on its outbox (that reader may have died before publishing), or
// never (zero: a decision wakes it) when it has none.
func nextLook(snap store.Snapshot) time.Time {
	var next time.Time
	earliest := func(t time.Time) {
		if !t.IsZero() && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	for _, c := range snap.Calls {
		if c.Status == pipeline.CallSuspended && c.Parking != nil {
			earliest(c.Parking.Deadline)
		}
	}
	for _, h := range snap.Held {
		earliest(h.Until)
	}
	earliest(snap.OutboxClaimedUntil)
	return next
}

// reread is the next round's view after a write that changed more than
// the caller knows.
func (w *Worker) reread(ctx context.Context, run pipeline.Run) (*view, error) {
	snap, err := w.snapshot(ctx, run.ID)
	if err != nil {
		return nil, err
	}
	return &view{Snapshot: snap}, nil
}

// snapshot reads what a reconcile round looks at, the decision outcomes
// waiting to be published claimed for this worker (reconcileOnce
// publishes them first thing).
func (w *Worker) snapshot(ctx context.Context, runID string) (store.Snapshot, error) {
	return w.store.Snapshot(ctx, runID, w.settings.Lease.Duration, w.now())
}

// sentWithin reports whether a message marked sent at `at` (zero: not
// sent) was sent less than d before now.
func sentWithin(at, now time.Time, d time.Duration) bool {
	return !at.IsZero() && now.Sub(at) < d
}
