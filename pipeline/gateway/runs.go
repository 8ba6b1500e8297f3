package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/store"
)

// MaxListLimit is the largest page GET /v1/runs serves.
const MaxListLimit = 500

// RunSummary is a run as GET /v1/runs lists it.
type RunSummary struct {
	RunID       string                `json:"run_id"`
	Agent       string                `json:"agent"`
	Status      pipeline.RunStatus    `json:"status"`
	Step        int                   `json:"step"`
	Termination *pipeline.Termination `json:"termination,omitempty"`
	Usage       pipeline.Usage        `json:"usage"`
	Metadata    json.RawMessage       `json:"metadata,omitempty"`
	BatchID     string                `json:"batch_id,omitempty"`
	ParentRunID string                `json:"parent_run_id,omitempty"` // a child run's parent (ADR 0060)
	StartAt     time.Time             `json:"start_at,omitzero"`
	ScheduleID  string                `json:"schedule_id,omitempty"`
	TickAt      time.Time             `json:"tick_at,omitzero"`
	CreatedAt   time.Time             `json:"created_at"`
	UpdatedAt   time.Time             `json:"updated_at"`

	// ForkedFrom and RerunOf name the run it was made from, if any.
	ForkedFrom *pipeline.ForkPoint `json:"forked_from,omitempty"`
	RerunOf    string              `json:"rerun_of,omitempty"`
	// CurrentAgent is the agent that holds the run now: Agent until a
	// handoff gave it to another (agents' handoffs).
	CurrentAgent string `json:"current_agent,omitempty"`
	// AgentVersion is the version of CurrentAgent's definition the run is
	// pinned to (a content hash; package versions); absent for a run
	// created before versions existed.
	AgentVersion string `json:"agent_version,omitempty"`
	// StepState is where the current step of a run not done stands
	// (awaiting_inference: its request waits in its model's batch).
	StepState pipeline.StepState `json:"step_state,omitempty"`
	// Inference is the inference mode the run asked for or was given (a
	// chat turn, a person's decision: live); absent: its model's default.
	Inference pipeline.InferenceMode `json:"inference,omitempty"`
}

// RunView is the answer of GET /v1/runs/{id}: the summary and every tool
// call of the run, in step and call order; for a child run the call of its
// parent that waits for it, for a parent its child runs, in call order.
type RunView struct {
	RunSummary
	ParentCallID string         `json:"parent_call_id,omitempty"`
	Children     []ChildView    `json:"children,omitempty"`
	ToolCalls    []ToolCallView `json:"tool_calls"`
	// State is the run's persistent plugin state (key → value), when any.
	State map[string]json.RawMessage `json:"state,omitempty"`
}

// ToolCallView is one tool call of RunView. Gate, Parking, Decision and
// OriginalArguments appear only when set: Gate once ToolGate has decided,
// Parking once the call was suspended (it stays after the decision),
// Decision once one was applied, OriginalArguments when a
// pass_decision_to_tool resume replaced the model's arguments (Arguments
// then holds the decision's payload).
type ToolCallView struct {
	CallID            string                  `json:"call_id"`
	Step              int                     `json:"step"`
	Tool              string                  `json:"tool"`
	Status            pipeline.ToolCallStatus `json:"status"`
	Arguments         json.RawMessage         `json:"arguments"`
	Result            json.RawMessage         `json:"result,omitempty"`
	Error             string                  `json:"error,omitempty"`
	Gate              pipeline.GateAction     `json:"gate,omitempty"`
	Parking           *ParkingView            `json:"parking,omitempty"`
	Decision          *DecisionView           `json:"decision,omitempty"`
	OriginalArguments json.RawMessage         `json:"original_arguments,omitempty"`
}

// ParkingView is what a suspended call waits with: its ticket, why it was
// parked, the hash of its arguments a decision may quote, how a resume uses
// the decision, and, when the approval times out, when and with what
// (resume or cancel).
type ParkingView struct {
	Ticket     string              `json:"ticket"`
	Reason     string              `json:"reason"`
	ArgsHash   string              `json:"args_hash"`
	ResumeMode pipeline.ResumeMode `json:"resume_mode"`
	Deadline   time.Time           `json:"deadline,omitzero"`
	OnTimeout  string              `json:"on_timeout,omitempty"`
	ParkedAt   time.Time           `json:"parked_at"`
	ChildRunID string              `json:"child_run_id,omitempty"` // an agent tool's call: the child run it waits for, which asks nobody
}

// DecisionView is the decision applied to a call. DecidedBy is who the
// decision says decided; SignedBy, with decisions.require_signature, the
// producer whose key verified it (the gateway's for HTTP decisions, whose
// decided_by is then the API key's name). Timeout is true when the
// sweeper applied the tool's on_timeout decision because the approval's
// deadline passed.
type DecisionView struct {
	DecisionID string `json:"decision_id"`
	Action     string `json:"action"`
	DecidedBy  string `json:"decided_by"`
	SignedBy   string `json:"signed_by,omitempty"`
	Reason     string `json:"reason"`
	Timeout    bool   `json:"timeout"`
}

// ChildView is a child run of RunView: its id, the call that started it,
// and its status.
type ChildView struct {
	RunID  string             `json:"run_id"`
	CallID string             `json:"call_id"`
	Status pipeline.RunStatus `json:"status"`
}

// RunList is the answer of GET /v1/runs. NextCursor is "" on the last page.
type RunList struct {
	Runs       []RunSummary `json:"runs"`
	NextCursor string       `json:"next_cursor"`
}

// MessageList is the answer of GET /v1/runs/{id}/messages: the run's
// conversation, input first.
type MessageList struct {
	Messages []pipeline.Message `json:"messages"`
}

func summaryOf(r pipeline.Run) RunSummary {
	v := RunSummary{
		RunID: r.ID, Agent: r.Agent, Status: r.Status, Step: r.Step,
		Termination: r.Termination, Usage: r.Usage, Metadata: r.Metadata, BatchID: r.Batch, ParentRunID: r.ParentRunID,
		StartAt: r.StartAt, ScheduleID: r.ScheduleID, TickAt: r.TickAt,
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, ForkedFrom: r.ForkedFrom, RerunOf: r.RerunOf, CurrentAgent: r.CurrentAgent,
		AgentVersion: r.AgentVersion, Inference: r.Inference,
	}
	if !r.Status.Final() {
		v.StepState = r.StepState
	}
	return v
}

func callViewOf(c pipeline.ToolCall) ToolCallView {
	args := c.Arguments
	if len(args) == 0 {
		args = json.RawMessage("null")
	}
	v := ToolCallView{
		CallID: c.ID, Step: c.Step, Tool: c.Tool, Status: c.Status,
		Arguments: args, Result: c.Result, Error: c.Error,
		Gate: c.Gate, OriginalArguments: c.OrigArgs,
	}
	if c.Parking != nil {
		p := parkingViewOf(*c.Parking)
		v.Parking = &p
	}
	if d := c.Decision; d != nil {
		v.Decision = &DecisionView{DecisionID: d.ID, Action: d.Action, DecidedBy: d.DecidedBy, SignedBy: d.SignedBy, Reason: d.Reason, Timeout: d.Timeout}
	}
	return v
}

func parkingViewOf(p pipeline.Parking) ParkingView {
	mode := p.ResumeMode
	if mode == "" {
		mode = pipeline.ResumeReplay
	}
	return ParkingView{
		Ticket: p.Ticket, Reason: p.Reason, ArgsHash: p.ArgsHash, ResumeMode: mode,
		Deadline: p.Deadline, OnTimeout: p.OnTimeout, ParkedAt: p.ParkedAt, ChildRunID: p.ChildRunID,
	}
}

// getRun serves GET /v1/runs/{id}.
func (s *Server) getRun(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	what := fmt.Sprintf("run %s", id)
	run, err := s.cfg.Store.GetRun(r.Context(), id)
	if err != nil {
		s.fail(w, r, what, err)
		return
	}
	if !s.visible(w, r, id, run.Tenant) {
		return
	}
	view, err := viewOf(r.Context(), s.cfg.Store, run)
	if err != nil {
		s.fail(w, r, what, err)
		return
	}
	writeJSON(w, http.StatusOK, view)
}

// viewOf is run as GET /v1/runs/{id} shows it: with its calls, its plugin
// state and its children, read from st.
func viewOf(ctx context.Context, st *store.Store, run pipeline.Run) (RunView, error) {
	calls, err := st.RunCalls(ctx, run.ID)
	if err != nil {
		return RunView{}, err
	}
	state, err := st.RunState(ctx, run.ID)
	if err != nil {
		return RunView{}, err
	}
	view := RunView{RunSummary: summaryOf(run), ParentCallID: run.ParentCallID, ToolCalls: make([]ToolCallView, 0, len(calls)), State: state}
	for _, c := range calls {
		view.ToolCalls = append(view.ToolCalls, callViewOf(c))
	}
	view.Children, err = children(ctx, st, run, calls)
	return view, err
}

// children are run's child runs that are written, in call order, with
// their statuses (one round trip); nil for a run without any.
func children(ctx context.Context, st *store.Store, run pipeline.Run, calls []pipeline.ToolCall) ([]ChildView, error) {
	if len(run.Children) == 0 {
		return nil, nil
	}
	var out []ChildView
	var ids []string
	for _, c := range calls {
		if _, ok := run.Children[c.ID]; ok {
			out = append(out, ChildView{RunID: pipeline.ChildRunID(run.ID, c.ID), CallID: c.ID})
			ids = append(ids, pipeline.ChildRunID(run.ID, c.ID))
		}
	}
	statuses, err := st.RunStatuses(ctx, ids)
	if err != nil {
		return nil, err
	}
	written := out[:0]
	for i, status := range statuses {
		if status.Status != "" {
			out[i].Status = status.Status
			written = append(written, out[i])
		}
	}
	return written, nil
}

// getMessages serves GET /v1/runs/{id}/messages.
func (s *Server) getMessages(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	what := fmt.Sprintf("run %s", id)
	// Messages of an unknown run may read as an empty list; the run decides.
	if _, ok := s.ownedRun(w, r, id); !ok {
		return
	}
	msgs, err := s.cfg.Store.Messages(r.Context(), id)
	if err != nil {
		s.fail(w, r, what, err)
		return
	}
	if msgs == nil {
		msgs = []pipeline.Message{}
	}
	writeJSON(w, http.StatusOK, MessageList{Messages: msgs})
}

// listRuns serves GET /v1/runs?status=&agent=&termination=&batch_id=&since=&until=&tenant=&meta.KEY=&limit=&cursor=
// (parseFilter, searchFilter).
func (s *Server) listRuns(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f, problems := parseFilter(q.Get)
	f.Cursor = q.Get("cursor")
	more, refused := s.searchFilter(r, q, &f)
	if refused != nil {
		writeError(w, refused)
		return
	}
	problems = append(problems, more...)
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxListLimit {
			problems = append(problems, fmt.Sprintf("limit %q is not a whole number from 1 to %d", v, MaxListLimit))
		}
		f.Limit = n
	}
	if len(problems) > 0 {
		writeError(w, invalidAll("invalid query", problems))
		return
	}
	runs, next, err := s.cfg.Store.ListRuns(r.Context(), f)
	if err != nil {
		s.fail(w, r, "list runs", err)
		return
	}
	out := RunList{Runs: make([]RunSummary, 0, len(runs)), NextCursor: next}
	for _, run := range runs {
		out.Runs = append(out.Runs, summaryOf(run))
	}
	writeJSON(w, http.StatusOK, out)
}
