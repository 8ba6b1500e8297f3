package store

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stepwise-run/stepwise/pipeline"
)

// CancelRun ends a run from outside (an operator, a client's cancel): every
// call of the current step that has not finished becomes cancelled with the
// error "run cancelled by <by>: <reason>" (one tool_call.finished each),
// every held decision is rejected ("run is done"; decision.rejected each,
// their ids seen), and the run is done with termination cancelled, detail
// "<by>: <reason>" (run.finished). It works from created, running and
// waiting; the step state is left as it is, so a worker still holding the
// step finds the run done and its commit is refused.
//
// After the script its calls leave the pending index; the run returned is
// valid even when that write fails (err says so). The run stays on the
// sweeper's schedule until its result is published (MarkPublished). A run already done is ErrStale, with the current run;
// ErrNotFound when there is no run. decisionID, when not "", is the
// cancel_run decision's id: it joins the run's seen ids with an outcome
// (applied, or rejected for a run already done) in the run's outbox of
// decision outcomes, once; a repeat adds none. Each call it cancels that
// was parked gets an applied outcome there too, decision id
// "cancel:<call id>", reason "run cancelled: <detail>": its approval
// request's close.
func (s *Store) CancelRun(ctx context.Context, runID, decisionID, by, reason string, now time.Time) (pipeline.Run, error) {
	if err := checkRunID(runID); err != nil {
		return pipeline.Run{}, err
	}
	detail := by
	switch {
	case by == "":
		detail = reason
	case reason != "":
		detail = by + ": " + reason
	}
	callErr := withReason("run cancelled", reason)
	if by != "" {
		callErr = withReason("run cancelled by "+by, reason)
	}
	what := "cancel run " + runID
	// The script cancels the calls of the current step and rejects the held
	// decisions, so it gets the step, its call list and the held hash as
	// read here and confirms they are unchanged; they change only while a
	// step commits or a decision arrives, so a retry is rarely needed.
	for range 3 {
		step, ids, held, err := s.cancelView(ctx, runID)
		if err != nil {
			return pipeline.Run{}, err
		}
		arg, err := cancelArgOf(step, ids, held, runID, decisionID, detail, callErr, now)
		if err != nil {
			return pipeline.Run{}, err
		}
		keys := []string{s.runKey(runID), s.eventsKey(runID), s.stepKey(runID, step), s.decisionsKey(runID), s.heldKey(runID)}
		v, err := s.call(ctx, s.scripts.cancelRun, what, keys, arg)
		if errors.Is(err, errRetry) {
			continue
		}
		if err != nil {
			return s.currentRun(ctx, runID, err)
		}
		run, err := s.decodeRunReply(runID, v)
		if err != nil {
			return pipeline.Run{}, err
		}
		return run, s.unindexPending(ctx, run.Tenant, runID, ids...)
	}
	return s.currentRun(ctx, runID, fmt.Errorf("%w: %s: the run's step kept changing", ErrStale, what))
}

// The moves of a cancel: every call not ended yet to cancelled, the run to
// done from any status.
var (
	endedCalls  = terminalStatuses
	cancelCalls = movedFrom(pipeline.CallCancelled, statusesWhere(callStatuses, func(st pipeline.ToolCallStatus) bool { return !st.Terminal() })...)
)

// cancelArg is cancel_run's argument (the script names each field).
type cancelArg struct {
	Step     int                        `json:"step"`
	Now      int64                      `json:"now"`
	Ended    pipeline.RunStatus         `json:"ended"`
	Terminal []pipeline.ToolCallStatus  `json:"terminal"`
	To       pipeline.ToolCallStatus    `json:"to"`
	Reason   pipeline.TerminationReason `json:"reason"`
	Detail   string                     `json:"detail"`
	Error    string                     `json:"error"`
	Finished entry                      `json:"finished"`
	Calls    []cancelledCall            `json:"calls"`
	Held     []rejectedHeld             `json:"held"`
	Decision string                     `json:"decision"`
	Close    closeArg                   `json:"close"`
}

// closeArg is how a run that ends closes the approval requests of its
// calls still parked (lib.lua's close_parked): each gets an applied
// outcome, decision id "cancel:<call id>" (closePrefix), with reason.
type closeArg struct {
	Parked pipeline.ToolCallStatus `json:"parked"`
	Prefix string                  `json:"prefix"`
	Reason string                  `json:"reason"`
}

// closePrefix begins the decision id of the outcome that closes the
// approval request of a call parked when its run ended.
const closePrefix = "cancel:"

// closeOf is the closeArg of a run ended for why.
func closeOf(why string) closeArg {
	return closeArg{Parked: pipeline.CallSuspended, Prefix: closePrefix, Reason: why}
}

// cancelledCall is a call of the step as read, and its tool_call.finished
// should the cancel end it.
type cancelledCall struct {
	ID    string `json:"id"`
	Event entry  `json:"event"`
}

// rejectedHeld is a held decision as read (the call it waits for, its
// entry and id), and its decision.rejected.
type rejectedHeld struct {
	Call  string `json:"call"`
	Entry string `json:"entry"`
	ID    string `json:"id"`
	Event entry  `json:"event"`
}

// cancelArgOf is cancel_run's argument for step, with its call ids and
// the held decisions as read.
func cancelArgOf(step int, ids []string, held map[string]string, runID, decisionID, detail, callErr string, now time.Time) (cancelArg, error) {
	t := pipeline.Termination{Reason: pipeline.ReasonCancelled, Detail: detail}
	finished, err := newEntry(step, "", pipeline.EventRunFinished, now, t)
	if err != nil {
		return cancelArg{}, err
	}
	arg := cancelArg{
		Step: step, Now: toMillis(now), Ended: endedRun, Terminal: endedCalls, To: cancelCalls,
		Reason: t.Reason, Detail: detail, Error: callErr, Finished: finished, Decision: decisionID,
		Close: closeOf(withReason("run cancelled", detail)),
		Calls: make([]cancelledCall, 0, len(ids)), Held: make([]rejectedHeld, 0, len(held)),
	}
	for _, id := range ids {
		ev, err := finishedEntry(step, id, cancelCalls, nil, callErr, now)
		if err != nil {
			return cancelArg{}, err
		}
		arg.Calls = append(arg.Calls, cancelledCall{ID: id, Event: ev})
	}
	for _, callID := range slices.Sorted(maps.Keys(held)) {
		d, err := decodeHeld(runID, map[string]string{callID: held[callID]})
		if err != nil {
			return cancelArg{}, err
		}
		ev, err := newEntry(step, callID, pipeline.EventDecisionRejected, now,
			rejectedData{DecisionID: d[0].ID, Reason: "run is done"})
		if err != nil {
			return cancelArg{}, err
		}
		arg.Held = append(arg.Held, rejectedHeld{Call: callID, Entry: held[callID], ID: d[0].ID, Event: ev})
	}
	return arg, nil
}

// cancelView reads what CancelRun's script checks: the run's step, that
// step's call ids and the held decisions. No run is ErrNotFound.
func (s *Store) cancelView(ctx context.Context, runID string) (int, []string, map[string]string, error) {
	stepStr, err := s.rdb.HGet(ctx, s.runKey(runID), "step").Result()
	if errors.Is(err, redis.Nil) {
		return 0, nil, nil, fmt.Errorf("%w: run %s", ErrNotFound, runID)
	}
	if err != nil {
		return 0, nil, nil, fmt.Errorf("cancel run %s: %w", runID, err)
	}
	step, err := strconv.Atoi(stepStr)
	if err != nil {
		return 0, nil, nil, fmt.Errorf("cancel run %s: step %q: %w", runID, stepStr, err)
	}
	var ids *redis.StringSliceCmd
	var held *redis.MapStringStringCmd
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		ids = p.LRange(ctx, s.stepKey(runID, step), 0, -1)
		held = p.HGetAll(ctx, s.heldKey(runID))
		return nil
	})
	if err != nil {
		return 0, nil, nil, fmt.Errorf("cancel run %s: %w", runID, err)
	}
	return step, ids.Val(), held.Val(), nil
}
