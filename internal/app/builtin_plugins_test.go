package app_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// The built-in plugins through the running pipeline, on the stock registry.
func TestBuiltinPlugins_deferred_tools_result_guard_and_reminder(t *testing.T) {
	t.Setenv("STEPWISE_TEST_OPENAI_KEY", "test-key")
	srv := &chatServer{}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	stack := connect(t, newInfra(t), parseConfig(t, fmt.Sprintf(`
kafka: {partitions: 4}
stepworker: {lease: 1s, sweep_interval: 100ms, dispatch_timeout: 3s}
toolworker: {lease: 1s}
agents:
  deferring:
    model: {provider: script, turns: [{text: hi}]}
    tools: [echo, sleep]
    plugins: {deferred_tools: {defer: [sleep]}}
  guarded:
    model: {provider: script, turns: [{text: hi}]}
    tools: [echo]
    plugins: {result_guard: {max_bytes: 100}}
  reminded:
    model: {provider: openai, name: m, base_url: %q, api_key_env: STEPWISE_TEST_OPENAI_KEY, stream: false}
    tools: [echo]
    plugins: {reminder: {message: "Answer in one sentence."}}
`, hs.URL+"/v1")))
	workers(t, stack)
	base := serve(t, stack)

	// deferred_tools: sleep starts deferred; tool_search finds and promotes it.
	id := createRun(t, base, "r-deferred", "deferring", script(call("S", "tool_search", `{"query":"sleep"}`)))
	v := waitDone(t, base, id, 30*time.Second)
	assertNaturalEnd(t, v, 1)
	if c := callOf(v, "S"); c.Status != "succeeded" || !strings.Contains(string(c.Result), `"sleep"`) {
		t.Errorf("tool_search: %+v", c)
	}
	if d := string(getState(t, base, id)["deferred_tools.deferred"]); strings.Contains(d, "sleep") {
		t.Errorf("sleep is still deferred after the search: %s", d)
	}

	// result_guard: a large result is cut with a notice to the model.
	big := strings.Repeat("x", 500)
	id = createRun(t, base, "r-guarded", "guarded", script(call("B", "echo", fmt.Sprintf(`{"blob":%q}`, big))))
	assertNaturalEnd(t, waitDone(t, base, id, 30*time.Second), 1)
	msgs := getMessages(t, base, id)
	if tool := msgs[2].Content; !strings.Contains(tool, "[stepwise: the result was") || len(tool) > 400 {
		t.Errorf("the tool result the model got: %q", tool)
	}

	// reminder: every inference carries the reminder, which stays out of the history.
	httpDo(t, http.MethodPost, base+"/v1/runs", map[string]any{"run_id": "r-reminded", "agent": "reminded", "input": "hi"}, nil)
	assertNaturalEnd(t, waitDone(t, base, "r-reminded", 30*time.Second), 1)
	srv.mu.Lock()
	bodies := srv.bodies
	srv.mu.Unlock()
	for i, b := range bodies {
		if !strings.Contains(fmt.Sprint(b["messages"]), "Answer in one sentence.") {
			t.Errorf("request %d lacks the reminder", i)
		}
	}
	if strings.Contains(fmt.Sprint(getMessages(t, base, "r-reminded")), "one sentence") {
		t.Errorf("the reminder leaked into the history")
	}
}
