package store

import (
	"context"
	"fmt"
	"strconv"

	"github.com/stepwise-run/stepwise/pipeline"
)

// The outbox marks. A state that asks for a message (a pending step asks
// for StepRequested, a new or resumed call for ToolCallRequested) is written
// first; the message is published after it, and then marked as sent here.
// A process that dies between the two leaves the mark unset, and the next
// reconcile of the run publishes the message again: the publish is at least
// once, and a reconcile that finds the mark set publishes nothing, so a
// backlog in Kafka is never re-published. The mark names what was sent (the
// step number; the call's dispatch generation), so a late mark of an older
// state never marks a newer one.

// dispatchMark is the sent mark of a call's current request: "new" for the
// model's call, "d:<decision id>" for a call resumed by that decision.
func dispatchMark(decisionID string) string {
	if decisionID == "" {
		return "new"
	}
	return "d:" + decisionID
}

// MarkRequested records that StepRequested for step `step` of the run is
// published (Run.Requested reads true while the run is at that step). A
// run that no longer exists is left alone.
func (s *Store) MarkRequested(ctx context.Context, runID string, step int) error {
	_, err := s.eval(ctx, s.scripts.markSent, "mark step "+strconv.Itoa(step)+" of run "+runID+" requested",
		[]string{s.runKey(runID)}, "step_sent", step)
	return err
}

// MarkDispatched records that the current request of each call is
// published (ToolCall.Dispatched reads true until a decision resumes the
// call). Calls of one run only.
func (s *Store) MarkDispatched(ctx context.Context, runID string, calls []pipeline.ToolCall) error {
	if len(calls) == 0 {
		return nil
	}
	keys := make([]string, len(calls))
	args := make([]any, 0, 2*len(calls))
	for i, c := range calls {
		keys[i] = s.callKey(runID, c.ID)
		dec := ""
		if c.Decision != nil {
			dec = c.Decision.ID
		}
		args = append(args, "sent", dispatchMark(dec))
	}
	_, err := s.eval(ctx, s.scripts.markSent, fmt.Sprintf("mark %d calls of run %s dispatched", len(calls), runID), keys, args...)
	return err
}

// ReleaseStepLease gives up owner's lease on step `step` of the run at
// once (a worker that stops before finishing the inference): the lease
// reads as expired, so the next reconcile re-requests the step instead of
// waiting for it to run out. ErrLeaseLost when owner no longer holds it.
func (s *Store) ReleaseStepLease(ctx context.Context, runID string, step int, owner string) error {
	return s.RenewStepLease(ctx, runID, step, Lease{Owner: owner})
}

// ReleaseCallLease is ReleaseStepLease for a running call.
func (s *Store) ReleaseCallLease(ctx context.Context, runID, callID, owner string) error {
	return s.RenewCallLease(ctx, runID, callID, Lease{Owner: owner})
}
