package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stepwise-run/stepwise/internal/app"
	"github.com/stepwise-run/stepwise/internal/tooling/testinfra"
	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/config"
	"github.com/stepwise-run/stepwise/topics"
)

// testConfig has short leases and a fast sweeper, so recovery tests take
// seconds, and two agents: parallel and sequential.
const testConfig = `
kafka: {partitions: 4}
stepworker: {lease: 1s, sweep_interval: 100ms, dispatch_timeout: 3s, max_attempts: 3}
toolworker: {lease: 1s, default_timeout: 10s}
agents:
  assistant:
    model: {provider: script, turns: [{text: "hi"}]}
    tools: [echo, sleep, fail]
  sequential:
    model: {provider: script, turns: [{text: "hi"}]}
    tools: [echo, sleep, fail]
    tool_execution: sequential
`

func parseConfig(t *testing.T, yaml string) *config.Config {
	t.Helper()
	cfg, err := config.Parse([]byte(yaml))
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	if cfg.Kafka.TopicPrefix == topics.DefaultPrefix {
		cfg.Kafka.TopicPrefix = testinfra.TopicPrefix(t)
	}
	return cfg
}

// infra is the Kafka and Redis of one test.
type infra struct {
	brokers  []string
	redisURL string
}

func newInfra(t *testing.T) infra {
	t.Helper()
	return infra{brokers: testinfra.Kafka(t), redisURL: testinfra.Redis(t)}
}

func (in infra) options(cfg *config.Config) app.Options {
	return app.Options{Config: cfg, Kafka: strings.Join(in.brokers, ","), Redis: in.redisURL, Logger: testLogger()}
}

func testLogger() *slog.Logger {
	if os.Getenv("STEPWISE_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// connect returns a stack on in, closed when t ends. wrap, when set,
// replaces the stack's publisher (to duplicate, reorder or record).
func connect(t *testing.T, in infra, cfg *config.Config) *app.Stack {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	stack, err := app.Connect(ctx, in.options(cfg))
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = stack.Close() })
	return stack
}

// connectLogged is connect with the stack's logs, debug level up, kept in
// the returned sink.
func connectLogged(t *testing.T, in infra, cfg *config.Config) (*app.Stack, *testinfra.Logs) {
	t.Helper()
	logs := &testinfra.Logs{}
	o := in.options(cfg)
	o.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	stack, err := app.Connect(ctx, o)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = stack.Close() })
	return stack, logs
}

// start runs f in the background until the returned stop is called (or t
// ends); stop waits for f to return.
func start(t *testing.T, f func(ctx context.Context) error) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f(ctx) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("component stopped with: %v", err)
		}
	}
	t.Cleanup(stop)
	return stop
}

// serve runs the stack's gateway on a random port and returns its base URL.
func serve(t *testing.T, stack *app.Stack) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	start(t, func(ctx context.Context) error { return stack.RunGateway(ctx, l) })
	return "http://" + l.Addr().String()
}

// workers runs a step worker and a tool worker on the stack.
func workers(t *testing.T, stack *app.Stack) {
	t.Helper()
	start(t, stack.RunStepWorker)
	start(t, func(ctx context.Context) error { return stack.RunToolWorker(ctx, nil) })
}

func httpDo(t *testing.T, method, url string, body any, into any) int {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, r)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if into != nil && resp.StatusCode < 300 {
		if err := json.Unmarshal(b, into); err != nil {
			t.Fatalf("%s %s: decode %s: %v", method, url, b, err)
		}
	}
	if resp.StatusCode >= 300 {
		t.Logf("%s %s → %d %s", method, url, resp.StatusCode, b)
	}
	return resp.StatusCode
}

// createRun posts a run with its own script model and returns its id.
func createRun(t *testing.T, base, runID, agent, script string) string {
	t.Helper()
	body := map[string]any{"run_id": runID, "agent": agent, "input": "go", "model": json.RawMessage(script)}
	var out struct {
		RunID string `json:"run_id"`
	}
	if code := httpDo(t, http.MethodPost, base+"/v1/runs", body, &out); code != http.StatusCreated {
		t.Fatalf("create run: status %d", code)
	}
	return out.RunID
}

// runView is GET /v1/runs/{id}.
type runView struct {
	RunID       string               `json:"run_id"`
	Status      pipeline.RunStatus   `json:"status"`
	Step        int                  `json:"step"`
	Termination pipeline.Termination `json:"termination"`
	Usage       pipeline.Usage       `json:"usage"`
	BatchID     string               `json:"batch_id"`
	StartAt     time.Time            `json:"start_at"`
	UpdatedAt   time.Time            `json:"updated_at"`
	ToolCalls   []callView           `json:"tool_calls"`
	Metadata    json.RawMessage      `json:"metadata"`
	ForkedFrom  *pipeline.ForkPoint  `json:"forked_from"`
	RerunOf     string               `json:"rerun_of"`
	// AgentVersion is the version of its agent the run is pinned to.
	AgentVersion string `json:"agent_version"`
}

type callView struct {
	CallID    string                  `json:"call_id"`
	Step      int                     `json:"step"`
	Tool      string                  `json:"tool"`
	Status    pipeline.ToolCallStatus `json:"status"`
	Arguments json.RawMessage         `json:"arguments"`
	Result    json.RawMessage         `json:"result,omitempty"`
	Error     string                  `json:"error,omitempty"`
	Decision  *struct {
		DecidedBy string `json:"decided_by"`
		SignedBy  string `json:"signed_by"`
	} `json:"decision,omitempty"`
}

func getRun(t *testing.T, base, id string) runView {
	t.Helper()
	var v runView
	if code := httpDo(t, http.MethodGet, base+"/v1/runs/"+id, nil, &v); code != http.StatusOK {
		t.Fatalf("get run %s: status %d", id, code)
	}
	return v
}

func getMessages(t *testing.T, base, id string) []pipeline.Message {
	t.Helper()
	var v struct {
		Messages []pipeline.Message `json:"messages"`
	}
	if code := httpDo(t, http.MethodGet, base+"/v1/runs/"+id+"/messages", nil, &v); code != http.StatusOK {
		t.Fatalf("get messages %s: status %d", id, code)
	}
	return v.Messages
}

// waitDone polls the run until it is done or the deadline passes.
func waitDone(t *testing.T, base, id string, within time.Duration) runView {
	t.Helper()
	var v runView
	testinfra.Eventually(t, within, func() bool {
		v = getRun(t, base, id)
		return v.Status == pipeline.RunDone
	}, func() string { return "run " + id + " is " + string(v.Status) })
	return v
}
