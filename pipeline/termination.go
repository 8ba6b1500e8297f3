package pipeline

// TerminationReason says why a run (or, for suspended, a stretch of it) ended.
type TerminationReason string

// The seven termination reasons.
const (
	ReasonNaturalEnd        TerminationReason = "natural_end"        // the model answered without tool calls
	ReasonBehaviorRequested TerminationReason = "behavior_requested" // a plugin skipped inference
	ReasonStopped           TerminationReason = "stopped"            // a stop condition fired; Code names it
	ReasonCancelled         TerminationReason = "cancelled"          // the run was cancelled from outside
	ReasonBlocked           TerminationReason = "blocked"            // a policy denied a tool call
	ReasonSuspended         TerminationReason = "suspended"          // waiting for decisions; not final
	ReasonError             TerminationReason = "error"              // a runtime error; Detail says which
)

// RunStatus maps the reason to the status it leaves the run in: suspended
// maps to waiting, every other reason to done.
func (r TerminationReason) RunStatus() RunStatus {
	if r == ReasonSuspended {
		return RunWaiting
	}
	return RunDone
}

// Termination is why a run ended: the reason, a code for stopped runs
// (max_rounds, timeout, …) and a human-readable detail.
type Termination struct {
	Reason TerminationReason `json:"reason"`
	Code   string            `json:"code,omitempty"`
	Detail string            `json:"detail,omitempty"`
}
