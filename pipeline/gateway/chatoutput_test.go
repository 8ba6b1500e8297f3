package gateway_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stepwise-run/stepwise/pipeline/gateway"
	"github.com/stepwise-run/stepwise/topics"
)

// What the AI SDK's addToolOutput adds to a frontend tool's call (a tool
// the client executes) is the decision that resumes it with the output as
// its result, or for an output-error cancels it with the error; the same
// request again is the same decision. The output of a tool stepwise ran,
// which the client's message carries back, answers nothing.
func TestAISDKChat_a_frontend_tools_output_resumes_its_call(t *testing.T) {
	h := newHarness(t, func(c *gateway.Config) {
		c.ClientTools = func(name string) bool { return name == "get_location" }
	})
	if status, _, _ := h.openChat(chatBody("c-out", userMsg("where am I?")), ""); status != http.StatusOK {
		t.Fatalf("first turn: %d", status)
	}
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

	onlyServed := chatBody("c-out", userMsg("where am I?"), map[string]any{"role": "assistant", "parts": []any{served}})
	h.post("/v1/ai-sdk/chat", onlyServed).wantError(t, http.StatusBadRequest, gateway.CodeInvalidRequest, "adds no output of a frontend tool's call")
}
