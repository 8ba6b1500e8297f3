package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/gateway"
	"github.com/stepwise-run/stepwise/pipeline/store"
)

// commitCalls creates a run of agent and commits its step 0 at now with
// calls, in the states given (Index is set from the position).
func (h *harness) commitCalls(agent string, now time.Time, calls ...pipeline.ToolCall) string {
	h.t.Helper()
	ctx := context.Background()
	id := h.createRun(fmt.Sprintf(`{"agent": %q, "input": "go"}`, agent)).RunID
	if _, err := h.store.ClaimStep(ctx, id, 0, store.Lease{Owner: "w1", Until: now.Add(time.Minute)}, now); err != nil {
		h.t.Fatalf("ClaimStep: %v", err)
	}
	assistant := pipeline.Message{Role: pipeline.RoleAssistant}
	for i := range calls {
		calls[i].RunID, calls[i].Index = id, i
		assistant.ToolCalls = append(assistant.ToolCalls,
			pipeline.ToolCallRequest{ID: calls[i].ID, Name: calls[i].Tool, Arguments: calls[i].Arguments})
	}
	if _, _, err := h.store.CommitStep(ctx, id, 0, "w1", store.StepCommit{Assistant: assistant, Calls: calls}, now); err != nil {
		h.t.Fatalf("CommitStep: %v", err)
	}
	return id
}

// parked is a call ToolGate suspended with p.
func parked(id, tool, args string, p pipeline.Parking) pipeline.ToolCall {
	return pipeline.ToolCall{ID: id, Tool: tool, Status: pipeline.CallSuspended, Gate: pipeline.GateSuspend,
		Arguments: json.RawMessage(args), Parking: &p}
}

// allowed is a call ToolGate let through.
func allowed(id, tool, args string) pipeline.ToolCall {
	return pipeline.ToolCall{ID: id, Tool: tool, Status: pipeline.CallNew, Gate: pipeline.GateAllow, Arguments: json.RawMessage(args)}
}

// pendingIDs lists GET /v1/pending?query as "run/call" ids, in order.
func (h *harness) pendingIDs(query string) []string {
	h.t.Helper()
	var out gateway.PendingList
	h.get("/v1/pending?"+query).want(h.t, http.StatusOK, &out)
	if out.Pending == nil {
		h.t.Fatalf("pending is null, want a list")
	}
	ids := []string{}
	for _, p := range out.Pending {
		ids = append(ids, p.RunID+"/"+p.CallID)
	}
	return ids
}

func TestPending_lists_parked_calls_oldest_first_with_filters(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	base := time.Now().Truncate(time.Millisecond)
	deadline := base.Add(30 * time.Minute)

	a := h.commitCalls("assistant", base.Add(1*time.Second),
		parked("c-a1", "issue_refund", `{"amount": 150}`, pipeline.Parking{Ticket: "t-a1", Reason: "amount over 100"}),
		allowed("c-a2", "lookup_order", `{"id": 7}`))
	b := h.commitCalls("helper", base.Add(2*time.Second),
		parked("c-b1", "issue_refund", `{"amount": 900}`, pipeline.Parking{Ticket: "t-b1", Reason: "ask",
			ResumeMode: pipeline.ResumeUseDecisionAsResult, Deadline: deadline, OnTimeout: "cancel"}),
		parked("c-b2", "delete_user", `{"user": "u-1"}`, pipeline.Parking{Ticket: "t-b2"}))
	// Decided calls and calls of a cancelled run are not pending.
	decided := h.commitCalls("assistant", base.Add(3*time.Second),
		parked("c-c1", "issue_refund", `{"amount": 200}`, pipeline.Parking{Ticket: "t-c1"}))
	res, err := h.store.ApplyDecision(ctx, decided, store.Decision{ID: "d-1", CallID: "c-c1", Action: store.ActionResume, DecidedBy: "alice"},
		base.Add(time.Hour), base.Add(4*time.Second))
	if err != nil || res.Outcome != store.DecisionApplied {
		t.Fatalf("ApplyDecision: %v, %+v", err, res)
	}
	cancelled := h.commitCalls("assistant", base.Add(5*time.Second),
		parked("c-d1", "issue_refund", `{"amount": 300}`, pipeline.Parking{Ticket: "t-d1"}))
	if _, err := h.store.CancelRun(ctx, cancelled, "", "ops", "test", base.Add(6*time.Second)); err != nil {
		t.Fatalf("CancelRun: %v", err)
	}

	for _, tc := range []struct {
		name, query string
		want        []string
	}{
		{"everything", "", []string{a + "/c-a1", b + "/c-b1", b + "/c-b2"}},
		{"one agent", "agent=helper", []string{b + "/c-b1", b + "/c-b2"}},
		{"one tool", "tool=issue_refund", []string{a + "/c-a1", b + "/c-b1"}},
		{"agent and tool", "agent=assistant&tool=issue_refund", []string{a + "/c-a1"}},
		{"one run", "run_id=" + b, []string{b + "/c-b1", b + "/c-b2"}},
		{"a run and a tool it has not parked", "run_id=" + a + "&tool=lookup_order", []string{}},
		{"a decided call's run", "run_id=" + decided, []string{}},
		{"a cancelled run", "run_id=" + cancelled, []string{}},
		{"an unknown run", "run_id=nope", []string{}},
		{"the oldest two", "limit=2", []string{a + "/c-a1", b + "/c-b1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := h.pendingIDs(tc.query); !slices.Equal(got, tc.want) {
				t.Errorf("GET /v1/pending?%s = %v, want %v", tc.query, got, tc.want)
			}
		})
	}

	// An entry carries what a decision for it needs.
	var out gateway.PendingList
	h.get("/v1/pending?run_id="+b+"&tool=issue_refund").want(t, http.StatusOK, &out)
	if len(out.Pending) != 1 {
		t.Fatalf("pending = %+v, want c-b1 alone", out.Pending)
	}
	got := out.Pending[0]
	want := gateway.PendingView{
		RunID: b, Agent: "helper", CallID: "c-b1", Step: 0, Tool: "issue_refund", Arguments: json.RawMessage(`{"amount":900}`),
		Ticket: "t-b1", Reason: "ask", ArgsHash: argsHash(t, `{"amount": 900}`), ResumeMode: pipeline.ResumeUseDecisionAsResult,
		Deadline: deadline, OnTimeout: "cancel", ParkedAt: base.Add(2 * time.Second),
	}
	if string(got.Arguments) != string(want.Arguments) {
		t.Errorf("arguments %s, want %s", got.Arguments, want.Arguments)
	}
	got.Arguments, want.Arguments = nil, nil
	if !got.Deadline.Equal(want.Deadline) || !got.ParkedAt.Equal(want.ParkedAt) {
		t.Errorf("deadline %v, parked_at %v; want %v and %v", got.Deadline, got.ParkedAt, want.Deadline, want.ParkedAt)
	}
	got.Deadline, got.ParkedAt, want.Deadline, want.ParkedAt = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("pending entry = %+v, want %+v", got, want)
	}

	// The contract's names; deadline only when the approval times out.
	var raw struct {
		Pending []map[string]any `json:"pending"`
	}
	h.get("/v1/pending?run_id="+a).want(t, http.StatusOK, &raw)
	if len(raw.Pending) != 1 {
		t.Fatalf("pending of %s = %v, want one", a, raw.Pending)
	}
	for _, k := range []string{"run_id", "agent", "call_id", "step", "tool", "arguments", "ticket", "reason", "args_hash", "resume_mode", "parked_at"} {
		if _, ok := raw.Pending[0][k]; !ok {
			t.Errorf("pending entry lacks %q: %v", k, raw.Pending[0])
		}
	}
	if _, ok := raw.Pending[0]["deadline"]; ok {
		t.Errorf("pending entry without a timeout has a deadline: %v", raw.Pending[0])
	}
	if mode := raw.Pending[0]["resume_mode"]; mode != "replay" {
		t.Errorf("resume_mode %v, want replay by default", mode)
	}
}

func TestPending_refuses_a_bad_limit_and_a_bad_run_id(t *testing.T) {
	h := newHarness(t)
	for _, limit := range []string{"0", "-1", "many", "1.5", fmt.Sprint(gateway.MaxPendingLimit + 1)} {
		h.get("/v1/pending?limit="+limit).wantError(t, http.StatusBadRequest, "invalid_request", fmt.Sprintf("limit %q", limit))
	}
	h.get(fmt.Sprintf("/v1/pending?limit=%d", gateway.MaxPendingLimit)).want(t, http.StatusOK, nil)
	h.get("/v1/pending?run_id=a%7Bb%7D").wantError(t, http.StatusBadRequest, "invalid_request", "a{b}")
}

func TestPending_is_an_empty_list_when_nothing_waits(t *testing.T) {
	h := newHarness(t)
	res := h.get("/v1/pending")
	res.want(t, http.StatusOK, nil)
	if got := string(res.body); got != "{\"pending\":[]}\n" {
		t.Errorf("body %q, want an empty list", got)
	}
}
