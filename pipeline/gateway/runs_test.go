package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/stepwise-run/stepwise/internal/tooling/testinfra"
	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/gateway"
	"github.com/stepwise-run/stepwise/pipeline/store"
)

func TestGet_a_run_shows_its_tool_calls_usage_and_termination(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	created := h.createRun(`{"agent": "assistant", "input": "refund order 7"}`)
	id := created.RunID

	now := time.Now()
	if _, err := h.store.ClaimStep(ctx, id, 0, store.Lease{Owner: "w1", Until: now.Add(time.Minute)}, now); err != nil {
		t.Fatalf("ClaimStep: %v", err)
	}
	args := json.RawMessage(`{"amount":12.5}`)
	commit := store.StepCommit{
		Assistant: pipeline.Message{Role: pipeline.RoleAssistant, Content: "Refunding.",
			ToolCalls: []pipeline.ToolCallRequest{{ID: "c-1", Name: "issue_refund", Arguments: args}}},
		Calls: []pipeline.ToolCall{{ID: "c-1", RunID: id, Step: 0, Index: 0, Tool: "issue_refund",
			Queue: "payments", Status: pipeline.CallNew, Arguments: args}},
		Usage: pipeline.Usage{InputTokens: 100, OutputTokens: 20},
	}
	if _, _, err := h.store.CommitStep(ctx, id, 0, "w1", commit, now); err != nil {
		t.Fatalf("CommitStep: %v", err)
	}
	if _, err := h.store.FinishRun(ctx, id, pipeline.Termination{Reason: pipeline.ReasonStopped, Code: "timeout", Detail: "10m passed"}, now); err != nil {
		t.Fatalf("FinishRun: %v", err)
	}

	var run gateway.RunView
	h.get("/v1/runs/"+id).want(t, http.StatusOK, &run)
	if run.Status != pipeline.RunDone {
		t.Errorf("status %q, want done", run.Status)
	}
	if run.Termination == nil || *run.Termination != (pipeline.Termination{Reason: pipeline.ReasonStopped, Code: "timeout", Detail: "10m passed"}) {
		t.Errorf("termination = %+v, want stopped/timeout", run.Termination)
	}
	if run.Usage != (pipeline.Usage{InputTokens: 100, OutputTokens: 20}) {
		t.Errorf("usage = %+v, want 100 in, 20 out", run.Usage)
	}
	if len(run.ToolCalls) != 1 {
		t.Fatalf("tool_calls = %+v, want one", run.ToolCalls)
	}
	c := run.ToolCalls[0]
	if c.CallID != "c-1" || c.Step != 0 || c.Tool != "issue_refund" || c.Status != pipeline.CallNew || string(c.Arguments) != `{"amount":12.5}` {
		t.Errorf("tool call = %+v, want c-1 issue_refund new with its arguments", c)
	}

	// The raw JSON keeps the contract's names.
	var raw map[string]any
	h.get("/v1/runs/"+id).want(t, http.StatusOK, &raw)
	for _, k := range []string{"run_id", "agent", "status", "step", "termination", "tool_calls", "usage", "created_at", "updated_at"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("GET /v1/runs/{id} lacks %q: %v", k, raw)
		}
	}

	var msgs gateway.MessageList
	h.get("/v1/runs/"+id+"/messages").want(t, http.StatusOK, &msgs)
	if len(msgs.Messages) != 2 || msgs.Messages[1].Role != pipeline.RoleAssistant || msgs.Messages[1].ToolCalls[0].ID != "c-1" {
		t.Errorf("messages = %+v, want the input and the assistant turn", msgs.Messages)
	}
}

func TestGet_an_unknown_run_is_a_404_everywhere(t *testing.T) {
	h := newHarness(t)
	for _, path := range []string{"/v1/runs/nope", "/v1/runs/nope/messages", "/v1/runs/nope/events"} {
		t.Run(path, func(t *testing.T) {
			h.get(path).wantError(t, http.StatusNotFound, "not_found", "nope")
		})
	}
}

func TestGet_a_run_gone_with_the_retention_is_a_404_that_says_it_may_have_expired(t *testing.T) {
	h := newHarness(t, func(c *gateway.Config) {
		c.Store = store.New(testinfra.RedisClient(t), store.WithRetention(7*24*time.Hour))
	})
	for _, path := range []string{"/v1/runs/gone", "/v1/runs/gone/messages", "/v1/runs/gone/events"} {
		h.get(path).wantError(t, http.StatusNotFound, "not_found",
			"run gone: not found: it never existed, or it ended more than 168h ago and expired (runs.retention)")
	}
}

func TestAn_unknown_route_is_a_JSON_404_and_a_wrong_method_a_JSON_405(t *testing.T) {
	h := newHarness(t)
	h.get("/v2/nothing").wantError(t, http.StatusNotFound, "not_found", "/v2/nothing")
	res := h.do(http.MethodDelete, "/v1/runs/r-1", "", nil)
	res.wantError(t, http.StatusMethodNotAllowed, "method_not_allowed", "DELETE")
	if allow := res.header.Get("Allow"); allow == "" {
		t.Errorf("405 without an Allow header")
	}
	h.do(http.MethodPut, "/v1/runs", "application/json", []byte(`{}`)).wantError(t, http.StatusMethodNotAllowed, "method_not_allowed")
}

func TestList_filters_by_status_and_agent_and_pages_with_a_cursor(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	var all, assistants, helpers []string
	for i := range 7 {
		agent := "assistant"
		if i%3 == 2 {
			agent = "helper"
		}
		id := fmt.Sprintf("run-%d", i)
		h.createRun(fmt.Sprintf(`{"run_id": %q, "agent": %q, "input": "hi", "metadata": {"i": %d}}`, id, agent, i))
		all = append(all, id)
		if agent == "helper" {
			helpers = append(helpers, id)
		} else {
			assistants = append(assistants, id)
		}
	}
	done := []string{assistants[0], helpers[0]}
	for _, id := range done {
		if _, err := h.store.FinishRun(ctx, id, pipeline.Termination{Reason: pipeline.ReasonCancelled}, time.Now()); err != nil {
			t.Fatal(err)
		}
	}

	list := func(query url.Values) []string {
		t.Helper()
		var ids []string
		cursor := ""
		for page := 0; ; page++ {
			if page > 20 {
				t.Fatalf("paging %v does not end", query)
			}
			q := url.Values{}
			for k, v := range query {
				q[k] = v
			}
			if cursor != "" {
				q.Set("cursor", cursor)
			}
			var out gateway.RunList
			h.get("/v1/runs?"+q.Encode()).want(t, http.StatusOK, &out)
			if out.Runs == nil {
				t.Fatalf("runs is null, want a list")
			}
			for _, r := range out.Runs {
				if st := query.Get("status"); st != "" && string(r.Status) != st {
					t.Errorf("filter %v listed %s with status %s", query, r.RunID, r.Status)
				}
				if a := query.Get("agent"); a != "" && r.Agent != a {
					t.Errorf("filter %v listed %s of agent %s", query, r.RunID, r.Agent)
				}
				if len(r.Metadata) == 0 {
					t.Errorf("summary of %s lacks its metadata", r.RunID)
				}
				ids = append(ids, r.RunID)
			}
			if out.NextCursor == "" {
				break
			}
			cursor = out.NextCursor
		}
		slices.Sort(ids)
		return ids
	}
	sorted := func(ids ...string) []string { return slices.Sorted(slices.Values(ids)) }

	for _, tc := range []struct {
		name  string
		query url.Values
		want  []string
	}{
		{"everything", url.Values{}, sorted(all...)},
		{"everything, two per page", url.Values{"limit": {"2"}}, sorted(all...)},
		{"one agent, one per page", url.Values{"agent": {"helper"}, "limit": {"1"}}, sorted(helpers...)},
		{"done runs", url.Values{"status": {"done"}}, sorted(done...)},
		{"created assistants, two per page", url.Values{"status": {"created"}, "agent": {"assistant"}, "limit": {"2"}}, sorted(assistants[1:]...)},
		{"an agent with no runs", url.Values{"agent": {"nobody"}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := list(tc.query); !slices.Equal(got, tc.want) {
				t.Errorf("listed %v, want %v", got, tc.want)
			}
		})
	}

	var page gateway.RunList
	h.get("/v1/runs?limit=3").want(t, http.StatusOK, &page)
	if len(page.Runs) != 3 || page.NextCursor == "" {
		t.Errorf("first page of 3: %d runs, next_cursor %q; want 3 and a cursor", len(page.Runs), page.NextCursor)
	}
}

func TestList_refuses_a_bad_status_and_a_bad_limit_together(t *testing.T) {
	h := newHarness(t)
	body := h.get("/v1/runs?status=sleeping&limit=many").
		wantError(t, http.StatusBadRequest, "invalid_request", `status "sleeping"`, `limit "many"`)
	if len(body.Error.Details) != 2 {
		t.Errorf("details = %q, want both problems", body.Error.Details)
	}
	for _, limit := range []string{"0", "-1", "501"} {
		h.get("/v1/runs?limit="+limit).wantError(t, http.StatusBadRequest, "invalid_request", "limit")
	}
	h.get("/v1/runs?limit=500").want(t, http.StatusOK, nil)
	h.get("/v1/runs?cursor=not-a-cursor!").wantError(t, http.StatusBadRequest, "invalid_request", "cursor")
}

func TestGet_a_run_shows_the_gate_parking_and_decision_of_its_calls(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	now := time.Now().Truncate(time.Millisecond)
	deadline := now.Add(time.Hour)
	id := h.commitCalls("assistant", now,
		parked("c-1", "issue_refund", `{"amount": 150}`, pipeline.Parking{Ticket: "t-1", Reason: "amount over 100",
			ResumeMode: pipeline.ResumePassDecisionToTool, Deadline: deadline, OnTimeout: "cancel"}),
		allowed("c-2", "lookup_order", `{"id": 7}`),
		pipeline.ToolCall{ID: "c-3", Tool: "echo", Status: pipeline.CallNew, Arguments: json.RawMessage(`{}`)})

	callsOf := func() map[string]map[string]json.RawMessage {
		t.Helper()
		var raw struct {
			ToolCalls []map[string]json.RawMessage `json:"tool_calls"`
		}
		h.get("/v1/runs/"+id).want(t, http.StatusOK, &raw)
		out := map[string]map[string]json.RawMessage{}
		for _, c := range raw.ToolCalls {
			var cid string
			_ = json.Unmarshal(c["call_id"], &cid)
			out[cid] = c
		}
		return out
	}
	wantKeys := func(call map[string]json.RawMessage, name string, present, absent []string) {
		t.Helper()
		for _, k := range present {
			if _, ok := call[k]; !ok {
				whole, _ := json.Marshal(call)
				t.Errorf("%s lacks %q: %s", name, k, whole)
			}
		}
		for _, k := range absent {
			if v, ok := call[k]; ok {
				t.Errorf("%s has %q = %s, want it absent", name, k, v)
			}
		}
	}

	// Parked: the gate and the parking, no decision yet.
	var run gateway.RunView
	h.get("/v1/runs/"+id).want(t, http.StatusOK, &run)
	if len(run.ToolCalls) != 3 {
		t.Fatalf("tool_calls = %+v, want three", run.ToolCalls)
	}
	c1 := run.ToolCalls[0]
	if c1.Status != pipeline.CallSuspended || c1.Gate != pipeline.GateSuspend || c1.Parking == nil || c1.Decision != nil {
		t.Fatalf("c-1 = %+v, want suspended by the gate with a parking and no decision", c1)
	}
	wantPark := gateway.ParkingView{Ticket: "t-1", Reason: "amount over 100", ArgsHash: argsHash(t, `{"amount":150}`),
		ResumeMode: pipeline.ResumePassDecisionToTool, Deadline: deadline, OnTimeout: "cancel", ParkedAt: now}
	if p := *c1.Parking; p.Ticket != wantPark.Ticket || p.Reason != wantPark.Reason || p.ArgsHash != wantPark.ArgsHash ||
		p.ResumeMode != wantPark.ResumeMode || !p.Deadline.Equal(deadline) || p.OnTimeout != "cancel" || !p.ParkedAt.Equal(now) {
		t.Errorf("parking = %+v, want %+v", p, wantPark)
	}
	calls := callsOf()
	wantKeys(calls["c-1"], "c-1", []string{"gate", "parking"}, []string{"decision", "original_arguments"})
	wantKeys(calls["c-2"], "c-2", []string{"gate"}, []string{"parking", "decision", "original_arguments"})
	wantKeys(calls["c-3"], "c-3", nil, []string{"gate", "parking", "decision", "original_arguments"})
	var parking map[string]json.RawMessage
	_ = json.Unmarshal(calls["c-1"]["parking"], &parking)
	wantKeys(parking, "c-1's parking", []string{"ticket", "reason", "args_hash", "resume_mode", "deadline", "on_timeout", "parked_at"}, nil)

	// Decided: pass_decision_to_tool runs it with the payload; the model's
	// arguments are kept.
	res, err := h.store.ApplyDecision(ctx, id, store.Decision{ID: "d-1", CallID: "c-1", Action: store.ActionResume,
		Payload: json.RawMessage(`{"amount":100}`), DecidedBy: "alice", Reason: "capped"}, now.Add(time.Hour), now.Add(time.Second))
	if err != nil || res.Outcome != store.DecisionApplied {
		t.Fatalf("ApplyDecision: %v, %+v", err, res)
	}
	h.get("/v1/runs/"+id).want(t, http.StatusOK, &run)
	c1 = run.ToolCalls[0]
	wantDecision := gateway.DecisionView{DecisionID: "d-1", Action: "resume", DecidedBy: "alice", Reason: "capped"}
	if c1.Decision == nil || *c1.Decision != wantDecision {
		t.Errorf("decision = %+v, want %+v", c1.Decision, wantDecision)
	}
	if c1.Status != pipeline.CallResuming || string(c1.Arguments) != `{"amount":100}` || string(c1.OriginalArguments) != `{"amount":150}` {
		t.Errorf("c-1 = %s with arguments %s, original %s; want resuming with the payload, the model's kept",
			c1.Status, c1.Arguments, c1.OriginalArguments)
	}
	if c1.Parking == nil || c1.Parking.Ticket != "t-1" {
		t.Errorf("parking = %+v after the decision, want it kept", c1.Parking)
	}
	calls = callsOf()
	wantKeys(calls["c-1"], "decided c-1", []string{"gate", "parking", "decision", "original_arguments"}, nil)
	var decision map[string]json.RawMessage
	_ = json.Unmarshal(calls["c-1"]["decision"], &decision)
	wantKeys(decision, "c-1's decision", []string{"decision_id", "action", "decided_by", "reason", "timeout"}, nil)
}
