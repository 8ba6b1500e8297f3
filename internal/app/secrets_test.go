package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stepwise-run/stepwise/internal/app"
)

// syncBuffer is a log sink safe for the workers' goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A secret the configuration names and an outside service echoes — an
// http tool's header in a good and in a failing answer, a model's API key
// in its text — reaches neither the run's calls, its messages, its event
// log nor the logs.
func TestSecrets_echoed_secrets_are_redacted_everywhere(t *testing.T) {
	const token, apiKey = "tool-token-8f3a9c", "sk-model-key-77d2e1"
	t.Setenv("STEPWISE_TEST_TOOL_TOKEN", token)
	t.Setenv("STEPWISE_TEST_OPENAI_KEY", apiKey)
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		if strings.HasSuffix(r.URL.Path, "/fail") {
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprintf(w, `{"error":"token %s is not allowed"}`, r.Header.Get("X-Token"))
			return
		}
		fmt.Fprintf(w, `{"you_sent":%s,"with":%q}`, body, r.Header.Get("X-Token"))
	}))
	defer echo.Close()
	turn := 0
	model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		turn++
		key := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		w.Header().Set("Content-Type", "application/json")
		if turn == 1 {
			fmt.Fprintf(w, `{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"my key is %s","tool_calls":[{"id":"a","type":"function","function":{"name":"leaky","arguments":"{}"}},{"id":"b","type":"function","function":{"name":"leaky_fail","arguments":"{}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`, key)
			return
		}
		fmt.Fprint(w, `{"id":"c2","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"done"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`)
	}))
	defer model.Close()
	cfg := parseConfig(t, fmt.Sprintf(`
kafka: {partitions: 4}
stepworker: {lease: 2s, sweep_interval: 100ms, dispatch_timeout: 3s}
toolworker: {lease: 2s}
agents:
  leaky:
    model: {provider: openai, name: m, base_url: %q, api_key_env: STEPWISE_TEST_OPENAI_KEY, stream: false, max_retries: 0}
    tools: [leaky, leaky_fail]
tools:
  leaky: {executor: {http: {url: %q, headers_env: {X-Token: STEPWISE_TEST_TOOL_TOKEN}}}}
  leaky_fail: {executor: {http: {url: %q, headers_env: {X-Token: STEPWISE_TEST_TOOL_TOKEN}}}, max_attempts: 1}
`, model.URL+"/v1", echo.URL+"/ok", echo.URL+"/fail"))
	var logs syncBuffer
	in := newInfra(t)
	o := in.options(cfg)
	o.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	stack, err := app.Connect(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stack.Close() })
	workers(t, stack)
	base := serve(t, stack)

	if code := httpDo(t, http.MethodPost, base+"/v1/runs", map[string]any{"run_id": "r-leak", "agent": "leaky", "input": "go"}, nil); code != http.StatusCreated {
		t.Fatalf("create: %d", code)
	}
	v := waitDone(t, base, "r-leak", 30*time.Second)
	stack.Logger.Info("a log line quoting " + token) // the logs pass through the same redaction

	var run, msgs json.RawMessage
	httpDo(t, http.MethodGet, base+"/v1/runs/r-leak", nil, &run)
	httpDo(t, http.MethodGet, base+"/v1/runs/r-leak/messages", nil, &msgs)
	events, _ := json.Marshal(runEvents(t, stack, "r-leak"))
	for where, text := range map[string]string{"the run": string(run), "the messages": string(msgs), "the events": string(events), "the logs": logs.String()} {
		for _, secret := range []string{token, apiKey} {
			if strings.Contains(text, secret) {
				t.Errorf("%s hold the secret %s", where, secret)
			}
		}
	}
	for _, want := range []string{"[redacted:STEPWISE_TEST_TOOL_TOKEN]", "[redacted:STEPWISE_TEST_OPENAI_KEY]"} {
		if !strings.Contains(string(msgs), want) {
			t.Errorf("the messages do not show %s: %s", want, msgs)
		}
	}
	if callOf(v, "b").Status != "failed" || !strings.Contains(callOf(v, "b").Error, "[redacted:STEPWISE_TEST_TOOL_TOKEN]") {
		t.Errorf("the failing call: %+v", callOf(v, "b"))
	}
	if !strings.Contains(logs.String(), "a log line quoting [redacted:STEPWISE_TEST_TOOL_TOKEN]") {
		t.Errorf("the log line was not redacted")
	}
}
