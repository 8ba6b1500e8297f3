package pipeline

import (
	"encoding/json"
	"time"
)

// DefaultTenant owns the runs created while the gateway has no API keys,
// and runs stored before tenants existed.
const DefaultTenant = "default"

// Run is a run's record as the store keeps it: the truth every handler checks
// before it writes.
type Run struct {
	ID          string          `json:"run_id"`
	Agent       string          `json:"agent"`
	Tenant      string          `json:"tenant,omitempty"` // who owns it at the gateway (DefaultTenant when none was stored)
	Status      RunStatus       `json:"status"`
	Step        int             `json:"step"`
	StepState   StepState       `json:"step_state,omitempty"`
	Termination *Termination    `json:"termination,omitempty"`
	Usage       Usage           `json:"usage"`
	Model       json.RawMessage `json:"model,omitempty"`    // the run's own script model, if it brought one
	Metadata    json.RawMessage `json:"metadata,omitempty"` // caller's metadata, returned as given
	RequestHash string          `json:"-"`                  // hash of the create request, for idempotent replays
	Attempts    int             `json:"attempts,omitempty"` // claims of the current step
	LeaseOwner  string          `json:"-"`
	LeaseUntil  time.Time       `json:"-"`
	Published   bool            `json:"-"`                     // a done run's result is on run-results
	RequestedAt time.Time       `json:"-"`                     // when StepRequested for the current step was last published (zero: not yet)
	DeferUntil  time.Time       `json:"-"`                     // the current step waits for a limit of its model until then (zero: it does not)
	Batch       string          `json:"batch_id,omitempty"`    // the batch it was created in (POST /v1/runs/batch)
	BatchBudget bool            `json:"-"`                     // its batch has a token budget (store.SetBatchBudget)
	Trace       string          `json:"-"`                     // the W3C traceparent of the run's trace ("" when tracing is off; package tracing)
	StartAt     time.Time       `json:"start_at,omitzero"`     // its first step is not requested before then (zero: at once)
	ScheduleID  string          `json:"schedule_id,omitempty"` // the schedule that started it, if one did
	TickAt      time.Time       `json:"tick_at,omitzero"`      // the tick of ScheduleID it was started for
	// Inference is the inference mode the run asked for, or a chat turn or
	// a person's decision gave it ("": its model's batch.default).
	Inference InferenceMode `json:"inference,omitempty"`
	// A child run (a call of a tool whose executor is an agent started
	// it): the run and the call that wait for its answer, and how deep it
	// is (a run nobody started: 0; its child: 1; ...).
	ParentRunID  string `json:"parent_run_id,omitempty"`
	ParentCallID string `json:"parent_call_id,omitempty"`
	Depth        int    `json:"depth,omitempty"`
	// Children are the child runs of a parent, by the id of the call that
	// asked for each: true once it is started, false while it is only
	// registered (ChildRunID names it).
	Children  map[string]bool `json:"-"`
	CreatedAt time.Time       `json:"created_at"`
	UpdatedAt time.Time       `json:"updated_at"`

	// Where the run comes from, when it was made from another run.
	ForkedFrom *ForkPoint `json:"forked_from,omitempty"` // the run and step it was forked from (POST /v1/runs/{id}/fork)
	RerunOf    string     `json:"rerun_of,omitempty"`    // the run it re-runs (POST /v1/runs/rerun)

	// CurrentAgent holds the run now: Agent until a handoff hands it to
	// another agent, whose instructions, model and tools its next steps
	// use. The store fills it with Agent for a run never handed off.
	CurrentAgent string `json:"current_agent,omitempty"`
	// AgentVersion is the version (a content hash, package versions) of
	// CurrentAgent's definition and its tools' the run is pinned to: the
	// version current where it was created, or, after a handoff, the
	// target's version current where it was handed off. "" for a run
	// created before versions existed: it follows the configuration.
	AgentVersion string `json:"agent_version,omitempty"`
	Handoffs     int    `json:"-"` // how many times it was handed off (runs.max_handoffs bounds them)
	HandoffCall  string `json:"-"` // the call of its latest handoff ("" before any)
}

// ForkPoint is where a fork branched off: the original run, and its last
// step whose history the fork copied.
type ForkPoint struct {
	RunID string `json:"run_id"`
	Step  int    `json:"step"`
}

// FirstStep is the step a new run starts at: 0, or for a fork the step
// after the one it was forked from (its steps up to there are history).
func (r Run) FirstStep() int {
	if r.ForkedFrom != nil {
		return r.ForkedFrom.Step + 1
	}
	return 0
}

// ToolCall is one tool call's record. Index is its position in the assistant
// turn that proposed it; results are appended to the conversation in that
// order.
type ToolCall struct {
	ID           string          `json:"call_id"`
	RunID        string          `json:"run_id"`
	Step         int             `json:"step"`
	Index        int             `json:"index"`
	Tool         string          `json:"tool"`
	Queue        string          `json:"queue"`
	Status       ToolCallStatus  `json:"status"`
	Arguments    json.RawMessage `json:"arguments"`
	Result       json.RawMessage `json:"result,omitempty"`
	Error        string          `json:"error,omitempty"`
	Attempts     int             `json:"attempts,omitempty"`
	LeaseOwner   string          `json:"-"`
	LeaseUntil   time.Time       `json:"-"`
	UpdatedAt    time.Time       `json:"updated_at"`
	DispatchedAt time.Time       `json:"-"` // when its request for its current state (new, resumed, this claim) was last published (zero: not yet)
	DispatchedBy string          `json:"-"` // the worker that marked it sent before publishing it (its instance); "" when marked after the publish

	// ToolGate's decision, and for a parked call what its decision needs.
	Gate     GateAction      `json:"gate,omitempty"`
	Parking  *Parking        `json:"parking,omitempty"`            // set while (and after) the call was suspended
	Decision *Decided        `json:"decision,omitempty"`           // the decision applied to it, if any
	OrigArgs json.RawMessage `json:"original_arguments,omitempty"` // pass_decision_to_tool: the arguments the model gave
}

// Parking is what a suspended call holds until its decision: a ticket, the
// hash of its arguments (a decision may quote it), how a resume uses the
// decision, and when the approval times out and with what.
type Parking struct {
	Ticket     string     `json:"ticket"`
	Reason     string     `json:"reason,omitempty"`
	ArgsHash   string     `json:"args_hash"`
	ResumeMode ResumeMode `json:"resume_mode"`
	Deadline   time.Time  `json:"deadline,omitzero"`    // zero: no timeout
	OnTimeout  string     `json:"on_timeout,omitempty"` // resume or cancel
	ParkedAt   time.Time  `json:"parked_at"`
	// ChildRunID is the child run an agent tool's call waits for (ADR
	// 0060). Such a parking asks nobody: it is no approval request and
	// not pending (GET /v1/pending), the child's end decides it.
	ChildRunID string `json:"child_run_id,omitempty"`
}

// AwaitsDecision reports whether p waits for a decision from outside (a
// person, another system): every parking but a child run's.
func (p Parking) AwaitsDecision() bool { return p.ChildRunID == "" }

// Decided is a decision as applied to a call.
type Decided struct {
	ID        string `json:"decision_id"`
	Action    string `json:"action"`
	DecidedBy string `json:"decided_by,omitempty"` // who decided, as the decision claims
	SignedBy  string `json:"signed_by,omitempty"`  // the producer whose key verified the decision (decisions.require_signature)
	Reason    string `json:"reason,omitempty"`
	Timeout   bool   `json:"timeout,omitempty"` // applied by the sweeper when the approval timed out
}

// CallStatuses returns the statuses of calls, in order, for DeriveRunStatus.
func CallStatuses(calls []ToolCall) []ToolCallStatus {
	out := make([]ToolCallStatus, len(calls))
	for i, c := range calls {
		out[i] = c.Status
	}
	return out
}
