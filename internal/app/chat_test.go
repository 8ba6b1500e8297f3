package app_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stepwise-run/stepwise/pipeline"
)

// sseData posts body to url and reads the stream to its end: its data
// lines decoded, and whether one was the AI SDK's [DONE].
func sseData(t *testing.T, url string, body map[string]any) (chunks []map[string]any, done bool) {
	t.Helper()
	b, _ := json.Marshal(body)
	res, err := http.Post(url, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("POST %s: %d", url, res.StatusCode)
	}
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if data == "[DONE]" {
			done = true
			continue
		}
		var c map[string]any
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			t.Fatalf("chunk %q: %v", data, err)
		}
		chunks = append(chunks, c)
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("the stream of %s: %v; chunks %v", url, err, chunks)
	}
	return chunks, done
}

// chatResponse posts an AI SDK chat request to url and reads its UI message stream to [DONE]: the chunks, decoded.
func chatResponse(t *testing.T, url string, body map[string]any) []map[string]any {
	t.Helper()
	chunks, done := sseData(t, url, body)
	if !done {
		t.Fatalf("the stream of %s ended without [DONE]: chunks %v", url, chunks)
	}
	return chunks
}

// aguiResponse posts a RunAgentInput to url and reads its events: the
// last is RUN_FINISHED, whose outcome it returns too.
func aguiResponse(t *testing.T, url string, input map[string]any) (events []map[string]any, outcome map[string]any) {
	t.Helper()
	events, _ = sseData(t, url, input)
	if len(events) == 0 || events[len(events)-1]["type"] != "RUN_FINISHED" {
		t.Fatalf("the AG-UI run did not end with RUN_FINISHED: %v", events)
	}
	outcome, _ = events[len(events)-1]["outcome"].(map[string]any)
	return events, outcome
}

// chunksOf are the chunks of a type.
func chunksOf(chunks []map[string]any, typ string) []map[string]any {
	var out []map[string]any
	for _, c := range chunks {
		if c["type"] == typ {
			out = append(out, c)
		}
	}
	return out
}

// A chat whose agent (named in the query) calls a frontend tool: the
// stream hands the call to the client, asking no approval, and the output
// the client adds to it (the AI SDK's addToolOutput) resumes the call with
// that result, in the same response as the rest of the run.
func TestChat_a_frontend_tools_output_resumes_its_parked_call(t *testing.T) {
	_, base := approvalStack(t)
	url := base + "/v1/ai-sdk/chat?agent=approvals"
	user := map[string]any{"id": "u1", "role": "user", "parts": []any{map[string]any{"type": "text", "text": "go"}}}
	first := map[string]any{"id": "chat-ui", "messages": []any{user},
		"model": json.RawMessage(script(call("U", "ui", `{"question":"color?"}`), call("E", "echo", `{"x":1}`)))}
	chunks := chatResponse(t, url, first)
	inputs := map[string]map[string]any{}
	for _, c := range chunksOf(chunks, "tool-input-available") {
		inputs[c["toolCallId"].(string)] = c
	}
	if inputs["U"] == nil || inputs["U"]["providerExecuted"] != nil || inputs["E"]["providerExecuted"] != true {
		t.Fatalf("tool inputs: %v", inputs)
	}
	if a := chunksOf(chunks, "tool-approval-request"); len(a) != 0 {
		t.Fatalf("a frontend tool asked for approval: %v", a)
	}
	if f := chunksOf(chunks, "finish"); len(f) != 1 || f[0]["finishReason"] != "tool-calls" {
		t.Fatalf("finish: %v", f)
	}

	answer := map[string]any{"id": "chat-ui", "messages": []any{user, map[string]any{"id": "chat-ui", "role": "assistant", "parts": []any{
		map[string]any{"type": "step-start"},
		map[string]any{"type": "dynamic-tool", "toolName": "ui", "toolCallId": "U", "state": "output-available", "input": map[string]any{}, "output": "blue"},
		map[string]any{"type": "dynamic-tool", "toolName": "echo", "toolCallId": "E", "state": "output-available", "providerExecuted": true, "input": map[string]any{}, "output": map[string]any{"x": 1}},
	}}}}
	rest := chatResponse(t, url, answer)
	if f := chunksOf(rest, "finish"); len(f) != 1 || f[0]["finishReason"] != "stop" {
		t.Fatalf("the rest of the run: %v", rest)
	}
	v := waitDone(t, base, "chat-ui", 30*time.Second)
	if c := callOf(v, "U"); c.Status != pipeline.CallSucceeded || string(c.Result) != `"blue"` {
		t.Fatalf("U: %+v", c)
	}
}

// An AG-UI thread whose agent (named in the query) calls a frontend tool
// in two steps: each call is handed to the client (TOOL_CALL_START/ARGS/
// END) and the run ends with success naming it in pendingToolCallIds, no
// interrupt; the tool message the client adds resumes it with its
// content, in the same response as the rest of the run; the earlier
// output, sent again with the client's history, changes nothing.
func TestChat_an_AGUI_tool_message_resumes_its_parked_frontend_call(t *testing.T) {
	_, base := approvalStack(t)
	url := base + "/v1/ag-ui/run?agent=approvals"
	model := `{"provider":"script","turns":[` +
		`{"text":"asking","tool_calls":[` + call("U", "ui", `{"question":"color?"}`) + `,` + call("E", "echo", `{"x":1}`) + `]},` +
		`{"text":"asking again","tool_calls":[` + call("V", "ui", `{"question":"city?"}`) + `]},` +
		`{"text":"done"}]}`
	messages := []any{map[string]any{"id": "u1", "role": "user", "content": "go"}}
	input := func(msgs ...any) map[string]any {
		messages = append(messages, msgs...)
		return map[string]any{"threadId": "ag-thread", "runId": fmt.Sprintf("r%d", len(messages)), "messages": messages,
			"forwardedProps": map[string]any{"model": json.RawMessage(model)}}
	}
	wantPending := func(outcome map[string]any, ids ...any) {
		t.Helper()
		if outcome["type"] != "success" || outcome["interrupts"] != nil || !reflect.DeepEqual(outcome["pendingToolCallIds"], any(ids)) {
			t.Fatalf("outcome %v, want success with pendingToolCallIds %v", outcome, ids)
		}
	}
	toolCall := func(id, name string) map[string]any {
		return map[string]any{"id": id, "type": "function", "function": map[string]any{"name": name, "arguments": "{}"}}
	}

	events, outcome := aguiResponse(t, url, input())
	wantPending(outcome, "U")
	started := map[any]bool{}
	for _, ev := range events {
		if ev["type"] == "TOOL_CALL_START" {
			started[ev["toolCallId"]] = true
		}
	}
	if !started["U"] || !started["E"] {
		t.Fatalf("tool calls started: %v", started)
	}

	_, outcome = aguiResponse(t, url, input(
		map[string]any{"id": "a1", "role": "assistant", "toolCalls": []any{toolCall("U", "ui"), toolCall("E", "echo")}},
		map[string]any{"id": "res-E", "role": "tool", "toolCallId": "E", "content": `{"x":1}`},
		map[string]any{"id": "res-U", "role": "tool", "toolCallId": "U", "content": "blue"}))
	wantPending(outcome, "V")

	events, outcome = aguiResponse(t, url, input(
		map[string]any{"id": "a2", "role": "assistant", "toolCalls": []any{toolCall("V", "ui")}},
		map[string]any{"id": "res-V", "role": "tool", "toolCallId": "V", "content": `{"city":"Lisbon"}`}))
	if outcome["type"] != "success" || outcome["pendingToolCallIds"] != nil {
		t.Fatalf("the rest of the run: %v", events)
	}
	v := waitDone(t, base, "ag-thread", 30*time.Second)
	if c := callOf(v, "U"); c.Status != pipeline.CallSucceeded || string(c.Result) != `"blue"` {
		t.Fatalf("U: %+v", c)
	}
	if c := callOf(v, "V"); c.Status != pipeline.CallSucceeded || string(c.Result) != `{"city":"Lisbon"}` {
		t.Fatalf("V: %+v", c)
	}
}
