package pipeline

import "fmt"

// ToolCallStatus is the lifecycle of one tool call.
type ToolCallStatus string

// The seven tool-call statuses.
const (
	CallNew       ToolCallStatus = "new"       // proposed by the model, not started
	CallRunning   ToolCallStatus = "running"   // a tool worker executes it
	CallSuspended ToolCallStatus = "suspended" // parked, awaiting a decision
	CallResuming  ToolCallStatus = "resuming"  // a decision arrived, replay pending
	CallSucceeded ToolCallStatus = "succeeded" // final
	CallFailed    ToolCallStatus = "failed"    // final
	CallCancelled ToolCallStatus = "cancelled" // final
)

// callTransitions is exactly the seeds' table. Suspended goes only to
// resuming or cancelled; resuming may go anywhere but new; final states stay.
var callTransitions = map[ToolCallStatus][]ToolCallStatus{
	CallNew:       {CallRunning, CallSuspended, CallSucceeded, CallFailed, CallCancelled},
	CallRunning:   {CallSucceeded, CallFailed, CallCancelled, CallSuspended},
	CallSuspended: {CallResuming, CallCancelled},
	CallResuming:  {CallRunning, CallSuspended, CallSucceeded, CallFailed, CallCancelled},
	CallSucceeded: {},
	CallFailed:    {},
	CallCancelled: {},
}

// ParseToolCallStatus returns the status named s, or ErrUnknownStatus.
func ParseToolCallStatus(s string) (ToolCallStatus, error) {
	st := ToolCallStatus(s)
	if _, ok := callTransitions[st]; !ok {
		return "", fmt.Errorf("tool call status %q: %w", s, ErrUnknownStatus)
	}
	return st, nil
}

// CanTransition reports whether the table allows from → to.
func (from ToolCallStatus) CanTransition(to ToolCallStatus) bool {
	for _, next := range callTransitions[from] {
		if next == to {
			return true
		}
	}
	return false
}

// Terminal reports whether the call has finished: succeeded, failed or cancelled.
func (from ToolCallStatus) Terminal() bool {
	return from == CallSucceeded || from == CallFailed || from == CallCancelled
}
