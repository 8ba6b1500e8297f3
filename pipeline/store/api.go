package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/stepwise-run/stepwise/pipeline"
)

// Lease is a claim on work: who holds it and until when.
type Lease struct {
	Owner string
	Until time.Time
}

// StepCommit is what a step worker commits after inference and ToolGate.
// Each call carries the state ToolGate left it in: Status new (or ""),
// suspended (with Parking), or terminal (succeeded/failed with Result or
// Error for set_result and block; cancelled), and its Gate.
type StepCommit struct {
	Assistant pipeline.Message        // the assistant turn, tool calls included
	Calls     []pipeline.ToolCall     // one record per proposed call, Index = position
	Usage     pipeline.Usage          // tokens of this inference, added to the run's
	State     []pipeline.StateUpdate  // plugin state updates of the step's phases, committed with it
	Failed    []pipeline.FailedAction // actions of its phases that failed: an action.failed event each
	// Sequential: the step runs its calls one at a time, so every finished
	// call fans in; otherwise only the last of the calls in flight does
	// (FinishCall).
	Sequential bool
	// Handoff, when set, hands the run to another agent with the commit:
	// nil for a step that hands nothing off.
	Handoff *Handoff
}

// Handoff is a run handed from one agent to another by one of its step's
// calls (config.Agent.Handoffs): the run's holder becomes To, its
// handoff count goes up by one, its agent version becomes Version, and
// the event run.handoff {"from", "to", "agent_version"?} names them.
type Handoff struct {
	From    string // the agent that held the run
	To      string // the agent that holds it from the next step on
	Version string // the version of To the run is pinned to from then on ("": none, it follows the configuration)
	CallID  string // the call of the step that handed it off
}

// StepEnd is what the StepEnd handler commits once every call of the step is
// terminal.
type StepEnd struct {
	ToolMessages []pipeline.Message      // tool-result messages, in call order
	Finish       *pipeline.Termination   // nil: go on to step+1; else end the run
	State        []pipeline.StateUpdate  // plugin state updates of StepEnd, committed with it
	Failed       []pipeline.FailedAction // actions of StepEnd that failed: an action.failed event each
	// CallIDs are the step's call ids in index order as the caller read
	// them (a snapshot has them), whose results ToolMessages tell: the end
	// is refused unless they are the step's. nil: whatever calls the step
	// has.
	CallIDs []string
}

// CallOutcome is what a tool worker commits for a call it executed.
type CallOutcome struct {
	Status  pipeline.ToolCallStatus // succeeded, failed or suspended
	Result  json.RawMessage         // the tool's result (succeeded)
	Error   string                  // the tool error (failed)
	Parking *pipeline.Parking       // required with suspended (the tool returned pending), refused otherwise
	// State and Failed are the persistent plugin state updates of the
	// call's phases and tool (a plugin tool's Command) and the actions
	// that failed there: committed with the outcome, an action.failed
	// event each.
	State  []pipeline.StateUpdate
	Failed []pipeline.FailedAction
}

// ListFilter selects runs for ListRuns. Zero fields match everything.
type ListFilter struct {
	Status pipeline.RunStatus
	Agent  string
	Tenant string // "" matches every tenant
	Limit  int    // default 50, at most 500
	Cursor string // from the previous page; "" for the first

	// Termination, Batch, Since and Until, when set, keep the runs ended
	// with that reason, of that batch, created at Since or later, created
	// before Until.
	Termination  pipeline.TerminationReason
	Batch        string
	Since, Until time.Time

	// Meta keeps the runs whose metadata has, at each key, the value
	// (SearchValue). Its keys must be searchable (WithSearchableMetadata):
	// a run is found by the value it was created with.
	Meta map[string]string
}

// IsZero reports whether f selects every run (its page fields aside).
func (f ListFilter) IsZero() bool {
	return f.Status == "" && f.Agent == "" && f.Tenant == "" && f.Termination == "" && f.Batch == "" &&
		f.Since.IsZero() && f.Until.IsZero() && len(f.Meta) == 0
}

// Matches reports whether r passes f (its page fields aside).
func (f ListFilter) Matches(r pipeline.Run) bool {
	return (f.Status == "" || r.Status == f.Status) && (f.Agent == "" || r.Agent == f.Agent) &&
		(f.Tenant == "" || r.Tenant == f.Tenant) && (f.Batch == "" || r.Batch == f.Batch) &&
		(f.Termination == "" || r.Termination != nil && r.Termination.Reason == f.Termination) &&
		(f.Since.IsZero() || !r.CreatedAt.Before(f.Since)) && (f.Until.IsZero() || r.CreatedAt.Before(f.Until)) &&
		f.metaMatches(r.Metadata)
}

// metaMatches reports whether metadata has each value of f.Meta.
func (f ListFilter) metaMatches(metadata json.RawMessage) bool {
	if len(f.Meta) == 0 {
		return true
	}
	var meta map[string]json.RawMessage
	if json.Unmarshal(metadata, &meta) != nil {
		return false
	}
	for k, want := range f.Meta {
		if v, ok := SearchValue(meta[k]); !ok || v != want {
			return false
		}
	}
	return true
}

// The operations below are implemented in the files beside this one. Each
// state change is one Lua script over the run's keys (hash tag {run_id}) that
// checks the expected state and appends the events it reports to the run's
// stream in the same script. The global indexes (runs, active, pending) are
// written by commands (or single-key scripts) of their own, around the
// per-run script.
var _ interface {
	CreateRun(ctx context.Context, run pipeline.Run, input []pipeline.Message, now time.Time) (pipeline.Run, bool, error)
	StartRun(ctx context.Context, run pipeline.Run, input []pipeline.Message, sweepAt, now time.Time) (pipeline.Run, bool, error)
	GetRun(ctx context.Context, runID string) (pipeline.Run, error)
	Messages(ctx context.Context, runID string) ([]pipeline.Message, error)
	StepCalls(ctx context.Context, runID string, step int) ([]pipeline.ToolCall, error)
	RunCalls(ctx context.Context, runID string) ([]pipeline.ToolCall, error)
	CallStatuses(ctx context.Context, refs []CallRef) ([]pipeline.ToolCallStatus, error)
	GetCall(ctx context.Context, runID, callID string) (pipeline.ToolCall, error)
	ListRuns(ctx context.Context, f ListFilter) ([]pipeline.Run, string, error)
	Events(ctx context.Context, runID, afterID string, count int64) ([]pipeline.Event, error)
	WaitEvents(ctx context.Context, runID, afterID string, block time.Duration) ([]pipeline.Event, error)
	ClaimStep(ctx context.Context, runID string, step int, lease Lease, now time.Time) (pipeline.Run, error)
	ClaimStepWithMessages(ctx context.Context, runID string, step int, lease Lease, now time.Time) (pipeline.Run, []pipeline.Message, error)
	RenewStepLease(ctx context.Context, runID string, step int, lease Lease) error
	AppendDelta(ctx context.Context, runID string, step int, owner, text string, now time.Time) error
	CommitStep(ctx context.Context, runID string, step int, owner string, c StepCommit, now time.Time) (pipeline.Run, []pipeline.ToolCall, error)
	EndStep(ctx context.Context, runID string, step int, end StepEnd, now time.Time) (pipeline.Run, []HeldDecision, error)
	FinishRun(ctx context.Context, runID string, t pipeline.Termination, now time.Time) (pipeline.Run, error)
	SetWaiting(ctx context.Context, runID string, step int, sequential bool, now time.Time) (pipeline.Run, error)
	CancelRun(ctx context.Context, runID, decisionID, by, reason string, now time.Time) (pipeline.Run, error)
	RunOwner(ctx context.Context, runID string) (tenant, trace string, err error)
	ResumeTarget(ctx context.Context, runID, callID string, sweepAt time.Time) (pipeline.Run, pipeline.ToolCall, error)
	Outcomes(ctx context.Context, runID string) ([]Outcome, error)
	ClaimOutcomes(ctx context.Context, runID string, hold time.Duration, now time.Time) ([]Outcome, error)
	OutcomesSent(ctx context.Context, runID string, sent []Outcome) error
	Approval(ctx context.Context, o Outcome) (pipeline.Run, pipeline.ToolCall, error)
	ClaimCall(ctx context.Context, runID, callID string, lease Lease, now time.Time) (pipeline.ToolCall, error)
	RenewCallLease(ctx context.Context, runID, callID string, lease Lease) error
	FinishCall(ctx context.Context, runID, callID, owner string, o CallOutcome, now time.Time) (Finished, error)
	ApplyDecision(ctx context.Context, runID string, d Decision, holdUntil, now time.Time) (DecisionResult, error)
	ApplyDecisionFirst(ctx context.Context, runID string, d Decision, holdUntil, now time.Time) (DecisionResult, error)
	ReadAfterDecision(ctx context.Context, runID, callID string, res DecisionResult, sweepAt time.Time, claim time.Duration, now time.Time) (Snapshot, error)
	HeldDecisions(ctx context.Context, runID string) ([]HeldDecision, error)
	DropHeld(ctx context.Context, runID, callID, decisionID, reason string, now time.Time) error
	ListPending(ctx context.Context, f PendingFilter) ([]PendingCall, error)
	Snapshot(ctx context.Context, runID string, claim time.Duration, now time.Time) (Snapshot, error)
	MarkRequested(ctx context.Context, runID string, step int, now time.Time) error
	MarkDispatched(ctx context.Context, runID string, calls []pipeline.ToolCall, now time.Time) error
	ClearDispatched(ctx context.Context, runID string, calls []pipeline.ToolCall) error
	Heartbeat(ctx context.Context, worker string, now time.Time, ttl time.Duration) (map[string]bool, error)
	ReleaseStepLease(ctx context.Context, runID string, step int, owner string) error
	ReleaseCallLease(ctx context.Context, runID, callID, owner string) error
	ScheduleSweep(ctx context.Context, runID string, at time.Time) error
	RescheduleWaiting(ctx context.Context, run pipeline.Run, calls []pipeline.ToolCall, read, next time.Time) (bool, error)
	DueRuns(ctx context.Context, now time.Time, limit int64, recheck time.Time) ([]string, error)
	Forget(ctx context.Context, runID string) error
	MarkPublished(ctx context.Context, run pipeline.Run, now time.Time) error
	TrimRetired(ctx context.Context, now time.Time, limit int64) (int, error)
	RunState(ctx context.Context, runID string) (map[string]json.RawMessage, error)
	Ping(ctx context.Context) error
} = (*Store)(nil)
