package app_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stepwise-run/stepwise/pipeline"
)

// chatResponse posts an AI SDK chat request to url and reads its UI message stream to [DONE]: the chunks, decoded.
func chatResponse(t *testing.T, url string, body map[string]any) []map[string]any {
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
	var chunks []map[string]any
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if data == "[DONE]" {
			return chunks
		}
		var c map[string]any
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			t.Fatalf("chunk %q: %v", data, err)
		}
		chunks = append(chunks, c)
	}
	t.Fatalf("the stream of %s ended without [DONE]: %v; chunks %v", url, sc.Err(), chunks)
	return nil
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
