package app_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stepwise-run/stepwise/internal/app"
	"github.com/stepwise-run/stepwise/internal/tooling/testinfra"
	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/tools/catalog"
)

// chatServer speaks the Chat Completions wire format: the first turn of a
// conversation proposes an echo call, the turn after the tool result
// answers. stream picks SSE chunks or one JSON body.
type chatServer struct {
	stream   bool
	fail429  atomic.Int32  // answer this many requests with 429 first
	broken   bool          // answer with a body that is not JSON
	hold     chan struct{} // when set, the first streamed turn pauses after its text until closed
	requests atomic.Int32
	mu       sync.Mutex
	bodies   []map[string]any
}

func (s *chatServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.requests.Add(1)
	var body map[string]any
	_ = json.NewDecoder(r.Body).Decode(&body)
	s.mu.Lock()
	s.bodies = append(s.bodies, body)
	s.mu.Unlock()
	if r.Header.Get("Authorization") != "Bearer test-key" {
		http.Error(w, `{"error":{"message":"bad key"}}`, http.StatusUnauthorized)
		return
	}
	if s.fail429.Add(-1) >= 0 {
		w.Header().Set("Retry-After", "0")
		http.Error(w, `{"error":{"message":"slow down","type":"rate_limit"}}`, http.StatusTooManyRequests)
		return
	}
	if s.broken {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `<html>oops</html>`)
		return
	}
	msgs, _ := body["messages"].([]any)
	answered := false // a tool result anywhere: the second turn
	for _, m := range msgs {
		if mm, _ := m.(map[string]any); mm["role"] == "tool" {
			answered = true
		}
	}
	if s.stream {
		s.writeStream(w, answered)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if answered {
		_, _ = io.WriteString(w, `{"id":"c2","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"All good."},"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15}}`)
		return
	}
	_, _ = io.WriteString(w, `{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"Let me check.","tool_calls":[{"id":"call_abc","type":"function","function":{"name":"echo","arguments":"{\"q\":\"x\"}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`)
}

func (s *chatServer) writeStream(w http.ResponseWriter, answered bool) {
	w.Header().Set("Content-Type", "text/event-stream")
	chunk := func(delta, finish string) string {
		if finish != "" {
			finish = `"` + finish + `"`
		} else {
			finish = "null"
		}
		return `{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + finish + `}]}`
	}
	var events []string
	if answered {
		events = []string{chunk(`{"role":"assistant","content":"All "}`, ""), chunk(`{"content":"good."}`, ""), chunk(`{}`, "stop"),
			`{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15}}`}
	} else {
		events = []string{chunk(`{"role":"assistant","content":"Let me "}`, ""), chunk(`{"content":"check."}`, ""),
			chunk(`{"tool_calls":[{"index":0,"id":"call_abc","type":"function","function":{"name":"echo","arguments":"{\"q\":"}}]}`, ""),
			chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"\"x\"}"}}]}`, ""), chunk(`{}`, "tool_calls"),
			`{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`}
	}
	for i, e := range events {
		_, _ = fmt.Fprintf(w, "data: %s\n\n", e)
		if i == 1 && !answered && s.hold != nil {
			w.(http.Flusher).Flush()
			<-s.hold
		}
	}
	_, _ = io.WriteString(w, "data: [DONE]\n\n")
}

func openAIConfig(url string, stream bool) string {
	return fmt.Sprintf(`
kafka: {partitions: 4}
stepworker: {lease: 2s, sweep_interval: 100ms, dispatch_timeout: 3s}
toolworker: {lease: 2s}
agents:
  gpt:
    model: {provider: openai, name: test-model, base_url: %q, api_key_env: STEPWISE_TEST_OPENAI_KEY, stream: %v, max_retries: 2}
    system: "Be brief."
    tools: [echo]
`, url+"/v1", stream)
}

func TestRealModels_an_openai_agent_runs_through_the_pipeline_streaming_and_not(t *testing.T) {
	t.Setenv("STEPWISE_TEST_OPENAI_KEY", "test-key")
	for _, stream := range []bool{true, false} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			srv := &chatServer{stream: stream}
			hold := make(chan struct{})
			if stream {
				srv.hold = hold
			}
			var released sync.Once
			release := func() { released.Do(func() { close(hold) }) }
			hs := httptest.NewServer(srv)
			defer hs.Close()
			defer release() // before Close, which waits for the held answer
			stack := connect(t, newInfra(t), parseConfig(t, openAIConfig(hs.URL, stream)))
			workers(t, stack)
			base := serve(t, stack)

			id := "r-openai-" + fmt.Sprint(stream)
			if code := httpDo(t, http.MethodPost, base+"/v1/runs", map[string]any{"run_id": id, "agent": "gpt", "input": "check x"}, nil); code != http.StatusCreated {
				t.Fatalf("create: %d", code)
			}
			if stream { // the text streams into the event log while the model is still answering
				var streamed string // the chunks that arrive together go out as one delta (ADR 0020)
				testinfra.Eventually(t, 30*time.Second, func() bool {
					streamed = ""
					for _, d := range eventsOf(runEvents(t, stack, id), pipeline.EventTextDelta) {
						var data struct{ Text string }
						_ = json.Unmarshal(d.Data, &data)
						streamed += data.Text
					}
					return streamed == "Let me check."
				}, func() string { return fmt.Sprintf("streamed text did not reach the event log: %q", streamed) })
				release()
			}
			v := waitDone(t, base, id, 30*time.Second)
			assertNaturalEnd(t, v, 1)
			assertHistory(t, getMessages(t, base, id), []pipeline.Message{
				{Role: "user", Content: "check x"},
				{Role: "assistant", Content: "Let me check.", ToolCalls: []pipeline.ToolCallRequest{{ID: "call_abc", Name: "echo", Arguments: json.RawMessage(`{"q":"x"}`)}}},
				{Role: "tool", ToolCallID: "call_abc", Content: `{"q":"x"}`},
				{Role: "assistant", Content: "All good."},
			})
			var full struct {
				Usage pipeline.Usage `json:"usage"`
			}
			httpDo(t, http.MethodGet, base+"/v1/runs/"+id, nil, &full)
			if full.Usage.InputTokens != 22 || full.Usage.OutputTokens != 8 {
				t.Fatalf("usage %+v, want 22 in, 8 out", full.Usage)
			}
			srv.mu.Lock()
			first := srv.bodies[0]
			srv.mu.Unlock()
			if first["model"] != "test-model" || !strings.Contains(fmt.Sprint(first["tools"]), "echo") || !strings.Contains(fmt.Sprint(first["messages"]), "Be brief.") {
				t.Fatalf("the request did not carry the model, tools and system prompt: %v", first)
			}
			if deltas := eventsOf(runEvents(t, stack, id), pipeline.EventTextDelta); len(deltas) != 0 {
				t.Fatalf("%d streamed deltas outlived their committed turns: %v", len(deltas), deltas)
			}
		})
	}
}

func TestRealModels_a_429_is_retried_and_a_malformed_answer_ends_the_run_with_error(t *testing.T) {
	t.Setenv("STEPWISE_TEST_OPENAI_KEY", "test-key")
	srv := &chatServer{}
	srv.fail429.Store(1)
	hs := httptest.NewServer(srv)
	defer hs.Close()
	stack := connect(t, newInfra(t), parseConfig(t, openAIConfig(hs.URL, false)))
	workers(t, stack)
	base := serve(t, stack)
	httpDo(t, http.MethodPost, base+"/v1/runs", map[string]any{"run_id": "r-429", "agent": "gpt", "input": "go"}, nil)
	assertNaturalEnd(t, waitDone(t, base, "r-429", 30*time.Second), 1)
	if n := srv.requests.Load(); n != 3 {
		t.Fatalf("%d requests, want 3 (a 429, its retry, the second step)", n)
	}

	srv.broken = true
	httpDo(t, http.MethodPost, base+"/v1/runs", map[string]any{"run_id": "r-broken", "agent": "gpt", "input": "go"}, nil)
	v := waitDone(t, base, "r-broken", 30*time.Second)
	if v.Termination.Reason != pipeline.ReasonError || !strings.Contains(v.Termination.Detail, "inference failed") {
		t.Fatalf("termination %+v, want an error saying the inference failed", v.Termination)
	}
}

func TestRealTools_an_MCP_tool_of_a_real_server_process_and_an_HTTP_tool(t *testing.T) {
	if testing.Short() {
		t.Skip("builds an MCP server; skipped with -short")
	}
	bin := filepath.Join(t.TempDir(), "mcpserver")
	if out, err := exec.Command("go", "build", "-o", bin, "../../pipeline/tools/mcptool/testdata/mcpserver").CombinedOutput(); err != nil {
		t.Fatalf("build the MCP server: %v\n%s", err, out)
	}
	var keys sync.Map
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		keys.Store(r.Header.Get("Idempotency-Key"), true)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"found":true,"query":%s}`, body)
	}))
	defer hs.Close()
	cfg := parseConfig(t, fmt.Sprintf(`
kafka: {partitions: 4}
stepworker: {lease: 2s, sweep_interval: 100ms, dispatch_timeout: 3s}
toolworker: {lease: 2s}
mcp_servers:
  calc: {command: [%q]}
agents:
  tools:
    model: {provider: script, turns: [{text: "hi"}]}
    tools: [add, lookup]
tools:
  add: {executor: {mcp: {server: calc}}}
  lookup:
    executor: {http: {url: %q}}
    parameters: {type: object, properties: {order: {type: string}}, required: [order]}
`, bin, hs.URL))
	stack := connect(t, newInfra(t), cfg)
	workers(t, stack)
	base := serve(t, stack)
	waitForCatalog(t, stack, "add")

	id := createRun(t, base, "r-tools", "tools", script(
		call("sum", "add", `{"a":2,"b":3}`),
		call("bad_sum", "add", `{"a":"two","b":3}`),
		call("order", "lookup", `{"order":"A-1"}`),
		call("no_order", "lookup", `{}`)))
	v := waitDone(t, base, id, 30*time.Second)
	assertNaturalEnd(t, v, 1)
	if c := callOf(v, "sum"); c.Status != "succeeded" || canonical(t, c.Result) != canonical(t, map[string]any{"sum": 5}) {
		t.Errorf("MCP add: %+v", c)
	}
	if c := callOf(v, "order"); c.Status != "succeeded" || canonical(t, c.Result) != canonical(t, map[string]any{"found": true, "query": map[string]any{"order": "A-1"}}) {
		t.Errorf("HTTP lookup: %+v", c)
	}
	if _, ok := keys.Load("r-tools:order"); !ok {
		t.Errorf("the HTTP tool did not get the call's idempotency key")
	}
	for _, bad := range []string{"bad_sum", "no_order"} {
		c := callOf(v, bad)
		if c.Status != "failed" || !strings.Contains(c.Error, "invalid arguments") {
			t.Errorf("%s: %+v, want failed for invalid arguments", bad, c)
		}
	}
	for _, e := range eventsOf(runEvents(t, stack, id), pipeline.EventToolCallStarted) {
		if e.CallID == "bad_sum" || e.CallID == "no_order" {
			t.Errorf("a call with invalid arguments was executed: %s", e.CallID)
		}
	}
}

// waitForCatalog waits until the MCP tool is in the catalog, with its
// parameters, as the tool worker publishes it.
func waitForCatalog(t *testing.T, stack *app.Stack, tool string) {
	t.Helper()
	cat := catalog.New(stack.Redis, "")
	testinfra.Eventually(t, 30*time.Second, func() bool {
		specs, err := cat.Get(t.Context(), []string{tool})
		return err == nil && len(specs[tool].Parameters) > 0
	}, func() string { return "the MCP tool " + tool + " never reached the catalog" })
}
