package gateway_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/gateway"
	"github.com/stepwise-run/stepwise/pipeline/store"
	"github.com/stepwise-run/stepwise/topics"
)

// What the AI SDK's addToolOutput adds to a parked frontend tool's call (a
// tool the client executes) is the decision that resumes it with the
// output as its result, or for an output-error cancels it with the error;
// the same request again is the same decision, until the call is decided.
// The output of a tool stepwise ran, which the client's message carries
// back, answers nothing.
func TestAISDKChat_a_frontend_tools_output_resumes_its_call(t *testing.T) {
	h := newHarness(t, func(c *gateway.Config) {
		c.ClientTools = func(name string) bool { return name == "get_location" }
	})
	if status, _, _ := h.openChat(chatBody("c-out", userMsg("where am I?")), ""); status != http.StatusOK {
		t.Fatalf("first turn: %d", status)
	}
	h.parkThreadCalls(t, "c-out", frontendCall("call_0_1"), frontendCall("call_0_2"))
	served := map[string]any{"type": "dynamic-tool", "toolName": "lookup_order", "toolCallId": "call_0_0",
		"state": "output-available", "providerExecuted": true, "input": map[string]any{}, "output": map[string]any{"order_id": "A-1"}}
	located := map[string]any{"type": "dynamic-tool", "toolName": "get_location", "toolCallId": "call_0_1",
		"state": "output-available", "input": map[string]any{}, "output": map[string]any{"city": "Lisbon"}}
	failed := map[string]any{"type": "tool-get_location", "toolCallId": "call_0_2",
		"state": "output-error", "input": map[string]any{}, "errorText": "no GPS"}
	answer := chatBody("c-out", userMsg("where am I?"), map[string]any{"id": "c-out", "role": "assistant",
		"parts": []any{map[string]any{"type": "step-start"}, served, located, failed}})
	for range 2 {
		if status, _, first := h.openChat(answer, ""); status != http.StatusOK {
			t.Fatalf("the outputs: %d %s", status, first)
		}
	}
	byCall := map[string][]topics.Decision{}
	for _, d := range h.decisions.waitFor(t, "c-out", 4) {
		byCall[d.CallID] = append(byCall[d.CallID], d)
	}
	if len(byCall) != 2 || len(byCall["call_0_1"]) != 2 || len(byCall["call_0_2"]) != 2 {
		t.Fatalf("decisions by call: %+v", byCall)
	}
	for _, d := range byCall["call_0_1"] {
		var payload map[string]string
		_ = json.Unmarshal(d.Payload, &payload)
		if d.DecisionID != "output:call_0_1" || d.Action != topics.ActionResume || payload["city"] != "Lisbon" {
			t.Fatalf("the output's decision: %+v", d)
		}
	}
	for _, d := range byCall["call_0_2"] {
		if d.DecisionID != "output:call_0_2" || d.Action != topics.ActionCancel || d.Reason != "no GPS" {
			t.Fatalf("the output-error's decision: %+v", d)
		}
	}

	// call_0_1's decision applied: its output, sent again with the
	// message, decides nothing; call_0_2's still does.
	if _, err := h.store.ApplyDecision(context.Background(), "c-out", store.Decision{ID: "output:call_0_1", CallID: "call_0_1", Action: topics.ActionCancel}, time.Time{}, time.Now()); err != nil {
		t.Fatal(err)
	}
	if status, _, first := h.openChat(answer, ""); status != http.StatusOK {
		t.Fatalf("the outputs again: %d %s", status, first)
	}
	if d := h.decisions.waitFor(t, "c-out", 5)[4]; d.CallID != "call_0_2" {
		t.Fatalf("a decided call's output decided again: %+v", d)
	}

	onlyServed := chatBody("c-out", userMsg("where am I?"), map[string]any{"role": "assistant", "parts": []any{served}})
	h.post("/v1/ai-sdk/chat", onlyServed).wantError(t, http.StatusBadRequest, gateway.CodeInvalidRequest, "adds no output of a frontend tool's call")
}

// parkThreadCalls commits step 0 of run runID with calls and sets the run
// waiting for them, as a step worker whose ToolGate parked them would.
func (h *harness) parkThreadCalls(t *testing.T, runID string, calls ...pipeline.ToolCall) {
	t.Helper()
	ctx := context.Background()
	now := time.Now()
	if _, err := h.store.ClaimStep(ctx, runID, 0, store.Lease{Owner: "w1", Until: now.Add(time.Minute)}, now); err != nil {
		t.Fatalf("ClaimStep: %v", err)
	}
	assistant := pipeline.Message{Role: pipeline.RoleAssistant}
	for i := range calls {
		calls[i].RunID, calls[i].Index = runID, i
		assistant.ToolCalls = append(assistant.ToolCalls, pipeline.ToolCallRequest{ID: calls[i].ID, Name: calls[i].Tool, Arguments: calls[i].Arguments})
	}
	if _, _, err := h.store.CommitStep(ctx, runID, 0, "w1", store.StepCommit{Assistant: assistant, Calls: calls}, now); err != nil {
		t.Fatalf("CommitStep: %v", err)
	}
	if _, err := h.store.SetWaiting(ctx, runID, 0, false, now); err != nil {
		t.Fatalf("SetWaiting: %v", err)
	}
}

// frontendCall is a call of get_location (the client runs it) parked at
// ToolGate; approvalCall one of issue_refund parked for approval.
func frontendCall(id string) pipeline.ToolCall {
	return parked(id, "get_location", `{}`, pipeline.Parking{Ticket: "t-" + id, Reason: "a frontend tool: the client supplies the result", ResumeMode: "use_decision_as_result"})
}

func approvalCall(id string) pipeline.ToolCall {
	return parked(id, "issue_refund", `{"amount": 250}`, pipeline.Parking{Ticket: "t-" + id, Reason: "amount over 100", ResumeMode: "replay"})
}

// aguiHarness is a gateway whose client runs get_location.
func aguiHarness(t *testing.T) *harness {
	t.Helper()
	return newHarness(t, func(c *gateway.Config) {
		c.ClientTools = func(name string) bool { return name == "get_location" }
		c.Keys = []gateway.Key{
			{Name: "ui", SHA256: sha256.Sum256([]byte("secret-ui")), Scopes: []gateway.Scope{gateway.ScopeRunsWrite, gateway.ScopeRunsRead, gateway.ScopeDecisionsWrite}},
			{Name: "reader", SHA256: sha256.Sum256([]byte("secret-reader")), Scopes: []gateway.Scope{gateway.ScopeRunsWrite, gateway.ScopeRunsRead}},
		}
	})
}

// aguiInput is a RunAgentInput of thread for the assistant agent.
func aguiInput(thread string, msgs ...map[string]any) map[string]any {
	return map[string]any{"threadId": thread, "runId": "r-" + thread, "messages": msgs, "forwardedProps": map[string]any{"agent": "assistant"}}
}

func aguiUser(text string) map[string]any {
	return map[string]any{"id": "u-" + text, "role": "user", "content": text}
}

func aguiTool(callID, content, errText string) map[string]any {
	m := map[string]any{"id": "tool-" + callID, "role": "tool", "toolCallId": callID, "content": content}
	if errText != "" {
		m["error"] = errText
	}
	return m
}

// startAGUIThread posts the first input of a thread, which creates its
// run, and drops the stream.
func (h *harness) startAGUIThread(t *testing.T, input map[string]any) {
	t.Helper()
	if status, _, first := h.openStream("/v1/ag-ui/run", input, "secret-ui"); status != http.StatusOK {
		t.Fatalf("the first input: %d %s", status, first)
	}
}

// aguiRun posts input to /v1/ag-ui/run with key and reads its events to
// RUN_FINISHED or RUN_ERROR.
func (h *harness) aguiRun(t *testing.T, key string, input map[string]any) []map[string]any {
	t.Helper()
	s := h.openSSE(t, http.MethodPost, "/v1/ag-ui/run", input, "Authorization", "Bearer "+key)
	defer s.cancel()
	var events []map[string]any
	for {
		var ev map[string]any
		if err := json.Unmarshal([]byte(s.next(t).data), &ev); err != nil {
			t.Fatalf("event: %v", err)
		}
		events = append(events, ev)
		if ev["type"] == "RUN_FINISHED" || ev["type"] == "RUN_ERROR" {
			return events
		}
	}
}

// An AG-UI run that stops on calls of the client's tools is a completed
// run, its outcome success naming them in pendingToolCallIds (AG-UI 1.0),
// each streamed as TOOL_CALL_START/ARGS/END for the client to run and
// none an interrupt; one that also waits for an approval ends with the
// interrupt outcome, whose only interrupts are the approvals.
func TestAGUIRun_a_frontend_tools_call_is_pending_not_an_interrupt(t *testing.T) {
	h := aguiHarness(t)
	cases := []struct {
		thread         string
		calls          []pipeline.ToolCall
		outcome        string
		pending        []any
		interruptCalls []any
	}{
		{"ag-frontend", []pipeline.ToolCall{frontendCall("F1"), frontendCall("F2")}, "success", []any{"F1", "F2"}, nil},
		{"ag-mixed", []pipeline.ToolCall{frontendCall("F1"), approvalCall("A1")}, "interrupt", nil, []any{"A1"}},
	}
	for _, c := range cases {
		t.Run(c.thread, func(t *testing.T) {
			input := aguiInput(c.thread, aguiUser("where am I?"))
			h.startAGUIThread(t, input)
			h.parkThreadCalls(t, c.thread, c.calls...)
			events := h.aguiRun(t, "secret-ui", input)
			var started []any
			for _, ev := range events {
				if ev["type"] == "TOOL_CALL_START" {
					started = append(started, ev["toolCallId"])
				}
			}
			if len(started) != len(c.calls) {
				t.Fatalf("tool calls started: %v", started)
			}
			outcome, _ := events[len(events)-1]["outcome"].(map[string]any)
			if outcome["type"] != c.outcome {
				t.Fatalf("outcome %v, want %s", outcome, c.outcome)
			}
			if got, _ := outcome["pendingToolCallIds"].([]any); !reflect.DeepEqual(got, c.pending) {
				t.Fatalf("pendingToolCallIds %v, want %v", got, c.pending)
			}
			var interruptCalls []any
			interrupts, _ := outcome["interrupts"].([]any)
			for _, in := range interrupts {
				interruptCalls = append(interruptCalls, in.(map[string]any)["toolCallId"])
			}
			if !reflect.DeepEqual(interruptCalls, c.interruptCalls) {
				t.Fatalf("interrupts of calls %v, want %v", interruptCalls, c.interruptCalls)
			}
		})
	}
}

// A tool message (an AG-UI client's output of a call) after the turn's
// user message answers a parked call of a tool the client runs: its
// content (JSON, or text) resumes the call as its result, its error
// cancels it, by the same decision the AI SDK's addToolOutput makes; the
// same input again is the same decision. The client sends its whole
// history every time, so a tool message for any other call (one decided
// already, one stepwise ran, an unknown one, one of an earlier turn) is a
// no-op, and needs no decisions:write.
func TestAGUIRun_a_tool_message_resumes_its_parked_frontend_call(t *testing.T) {
	h := aguiHarness(t)
	user := aguiUser("where am I?")
	h.startAGUIThread(t, aguiInput("ag-out", user))
	h.parkThreadCalls(t, "ag-out", frontendCall("F1"), frontendCall("F2"), frontendCall("F3"), approvalCall("A1"))
	calls := map[string]any{"id": "a-1", "role": "assistant", "toolCalls": []any{}}
	answers := aguiInput("ag-out", user, calls,
		aguiTool("F1", `{"city":"Lisbon"}`, ""), aguiTool("F2", "Lisbon, more or less", ""),
		aguiTool("F3", "", "no GPS"), aguiTool("A1", `{"refunded": true}`, ""), aguiTool("ghost", "boo", ""))
	for range 2 {
		if status, _, first := h.openStream("/v1/ag-ui/run", answers, "secret-ui"); status != http.StatusOK {
			t.Fatalf("the outputs: %d %s", status, first)
		}
	}
	byCall := map[string][]topics.Decision{}
	for _, d := range h.decisions.waitFor(t, "ag-out", 6) {
		byCall[d.CallID] = append(byCall[d.CallID], d)
	}
	want := map[string]struct {
		action, payload, reason string
	}{
		"F1": {topics.ActionResume, `{"city":"Lisbon"}`, ""},
		"F2": {topics.ActionResume, `"Lisbon, more or less"`, ""},
		"F3": {topics.ActionCancel, "", "no GPS"},
	}
	if len(byCall) != len(want) {
		t.Fatalf("decisions by call: %+v", byCall)
	}
	for id, w := range want {
		for _, d := range byCall[id] {
			if d.DecisionID != "output:"+id || d.Action != w.action || string(d.Payload) != w.payload || d.Reason != w.reason || d.DecidedBy != "ui" {
				t.Fatalf("the decision of %s: %+v, want %+v", id, d, w)
			}
		}
	}

	// F1's decision applied: its output, sent again, decides nothing (and
	// the input is the same request again: the run again).
	ctx := context.Background()
	if _, err := h.store.ApplyDecision(ctx, "ag-out", store.Decision{ID: "output:F1", CallID: "F1", Action: topics.ActionCancel}, time.Time{}, time.Now()); err != nil {
		t.Fatal(err)
	}
	before := h.pub.count(h.names.Decisions())
	noops := []struct {
		key   string
		input map[string]any
	}{
		{"secret-ui", aguiInput("ag-out", user, calls, aguiTool("F1", `{"city":"Porto"}`, ""), aguiTool("A1", "{}", ""))},
		{"secret-reader", aguiInput("ag-out", user, calls, aguiTool("F1", `{"city":"Porto"}`, ""), aguiTool("ghost", "boo", ""))},
	}
	for _, n := range noops {
		if status, _, first := h.openStream("/v1/ag-ui/run", n.input, n.key); status != http.StatusOK {
			t.Fatalf("outputs answered before, by %s: %d %s", n.key, status, first)
		}
	}
	h.wantNoDecisionSince(t, before)
	status, _, refusal := h.openStream("/v1/ag-ui/run", aguiInput("ag-out", user, calls, aguiTool("F2", `"Lisbon"`, "")), "secret-reader")
	if status != http.StatusForbidden {
		t.Fatalf("an output without decisions:write: %d %s", status, refusal)
	}

	// Turn 2: the tool messages before its user message are turn 1's.
	if _, err := h.store.FinishRun(ctx, "ag-out", pipeline.Termination{Reason: pipeline.ReasonNaturalEnd}, time.Now()); err != nil {
		t.Fatal(err)
	}
	next := aguiInput("ag-out", user, calls, aguiTool("F2", `"Lisbon"`, ""), aguiUser("and now?"))
	if status, _, first := h.openStream("/v1/ag-ui/run", next, "secret-ui"); status != http.StatusOK {
		t.Fatalf("turn 2: %d %s", status, first)
	}
	h.wantNoDecisionSince(t, before)
	if _, err := h.store.GetRun(ctx, "ag-out~2"); err != nil {
		t.Fatalf("turn 2: %v", err)
	}
}
