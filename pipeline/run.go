package pipeline

import "fmt"

// RunStatus is the coarse lifecycle of a run. Done is final.
type RunStatus string

// The four run statuses.
const (
	RunCreated RunStatus = "created" // persisted, no phase has run yet
	RunRunning RunStatus = "running" // inference or tools are executing
	RunWaiting RunStatus = "waiting" // nothing runs; suspended calls await decisions
	RunDone    RunStatus = "done"    // final; the termination says why
)

// runTransitions is the seeds' table: created → running | done;
// running → waiting | done; waiting → running | done; done → nothing.
var runTransitions = map[RunStatus][]RunStatus{
	RunCreated: {RunRunning, RunDone},
	RunRunning: {RunWaiting, RunDone},
	RunWaiting: {RunRunning, RunDone},
	RunDone:    {},
}

// ParseRunStatus returns the status named s, or ErrUnknownStatus.
func ParseRunStatus(s string) (RunStatus, error) {
	st := RunStatus(s)
	if _, ok := runTransitions[st]; !ok {
		return "", fmt.Errorf("run status %q: %w", s, ErrUnknownStatus)
	}
	return st, nil
}

// CanTransition reports whether the table allows from → to.
func (from RunStatus) CanTransition(to RunStatus) bool {
	for _, next := range runTransitions[from] {
		if next == to {
			return true
		}
	}
	return false
}

// Final reports whether no transition leaves the status.
func (from RunStatus) Final() bool { return from == RunDone }
