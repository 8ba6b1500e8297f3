package app_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/stepwise-run/stepwise/internal/app"
	"github.com/stepwise-run/stepwise/internal/tooling/testinfra"
	"github.com/stepwise-run/stepwise/pipeline"
)

// GET /metrics after a run and a malformed message: the steps, tool calls,
// tokens, results, requests and the dead letter are counted, the indexes'
// sizes and the consumer groups' lag shown, in the Prometheus text format.
func TestMetrics_a_run_is_counted_at_metrics(t *testing.T) {
	stack := connect(t, newInfra(t), parseConfig(t, testConfig))
	workers(t, stack)
	base := serve(t, stack)
	id := createRun(t, base, "r-metrics", "assistant", threeSteps)
	assertNaturalEnd(t, waitDone(t, base, id, 30*time.Second), 2)
	// A message no handler can read goes to the dead-letter topic, counted.
	if err := stack.Publisher.Publish(stack.Names.RunSteps(), message.NewMessage("bad-1", []byte("not json"))); err != nil {
		t.Fatal(err)
	}

	text := scrapeUntil(t, base, `stepwise_run_results_total{reason="natural_end"} 1`,
		`stepwise_dead_letters_total{topic="`+stack.Names.RunSteps()+`"} 1`)
	for _, want := range []string{
		`stepwise_steps_committed_total{agent="assistant"} 3`,
		`stepwise_tool_calls_total{status="succeeded",tool="echo"} 3`,
		`stepwise_tool_calls_total{status="succeeded",tool="sleep"} 1`,
		`stepwise_inference_duration_seconds_count{agent="assistant"} 3`,
		`stepwise_http_requests_total{code="201",route="POST /v1/runs"} 1`,
		`stepwise_pool_busy_slots{worker="stepworker"}`,
		`stepwise_pool_busy_slots{worker="toolworker"}`,
		`stepwise_tokens_total{kind="input",model="script"}`,
		`stepwise_runs_active `,
		`stepwise_calls_parked 0`,
		`stepwise_consumer_lag_messages{group="` + stack.Config.Kafka.TopicPrefix + `stepworker",partition="0",topic="` + stack.Names.RunSteps() + `"}`,
		`stepwise_consumer_lag_messages{group="` + stack.Config.Kafka.TopicPrefix + `toolworker",partition="0",topic="` + stack.Names.ToolCalls("default") + `"}`,
		`go_goroutines`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %s:\n%s", want, text)
		}
	}
}

// scrapeUntil reads the gateway's /metrics at base until it holds every one
// of want (failing t after 10 s), and returns the text.
func scrapeUntil(t *testing.T, base string, want ...string) string {
	t.Helper()
	var text string
	testinfra.Eventually(t, 10*time.Second, func() bool {
		res, err := http.Get(base + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		text = string(b)
		for _, w := range want {
			if !strings.Contains(text, w) {
				return false
			}
		}
		return true
	}, func() string { return fmt.Sprintf("/metrics lacks one of %q:\n%s", want, text) })
	return text
}

// A worker's --metrics asks what the gateway's GET /metrics asks: with
// auth.keys configured, a scrape needs a key with the admin scope. A
// worker knows only the admin keys (it reads only their environment: the
// reader's key_env is unset here), so any other key is as unknown as a
// guessed one: 401.
func TestMetrics_a_workers_metrics_need_an_admin_key_when_keys_are_configured(t *testing.T) {
	t.Setenv("STEPWISE_TEST_METRICS_ADMIN", "admin-secret")
	t.Setenv("STEPWISE_TEST_METRICS_READER", "") // a worker need not have it
	in := newInfra(t)
	file := filepath.Join(t.TempDir(), "stepwise.yaml")
	cfg := testConfig + fmt.Sprintf(`auth:
  keys:
    - {name: ops, key_env: STEPWISE_TEST_METRICS_ADMIN, scopes: [admin]}
    - {name: scraper, key_sha256: "%x", scopes: [runs:read]}
    - {name: reader, key_env: STEPWISE_TEST_METRICS_READER, scopes: [runs:read]}
`, sha256.Sum256([]byte("scraper-secret")))
	if err := os.WriteFile(file, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close() // the worker listens there
	for name, program := range map[string]app.Program{"stepworker": app.StepWorker(nil), "toolworker": app.ToolWorker(nil)} {
		t.Run(name, func(t *testing.T) {
			start(t, func(ctx context.Context) error {
				return program.Exec(ctx, []string{"--config", file, "--kafka", in.brokers[0], "--redis", in.redisURL, "--metrics", addr})
			})
			scrape := func(key string) int {
				req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/metrics", nil)
				if key != "" {
					req.Header.Set("Authorization", "Bearer "+key)
				}
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					return 0
				}
				_, _ = io.Copy(io.Discard, res.Body)
				_ = res.Body.Close()
				return res.StatusCode
			}
			testinfra.Eventually(t, 20*time.Second, func() bool { return scrape("admin-secret") == http.StatusOK },
				func() string { return fmt.Sprintf("the admin's scrape answered %d", scrape("admin-secret")) })
			for key, want := range map[string]int{"": http.StatusUnauthorized, "guessed": http.StatusUnauthorized, "scraper-secret": http.StatusUnauthorized} {
				if got := scrape(key); got != want {
					t.Errorf("scrape with key %q: %d, want %d", key, got, want)
				}
			}
		})
	}
}

// Runs waiting for a decision have not ended: stepwise_runs_active counts
// each of them with the others not finished, though the sweeper has
// nothing to look at in them (their calls have no deadline, so they are
// off the sweep schedule).
func TestMetrics_waiting_runs_are_counted_active(t *testing.T) {
	stack := connect(t, newInfra(t), parseConfig(t, approvalsConfig))
	workers(t, stack)
	base := serve(t, stack)
	for _, id := range []string{"r-waits-1", "r-waits-2"} {
		createRun(t, base, id, "approvals", script(call("A", "tool_a", `{"x":1}`)))
		waitFor(t, base, id, "waiting", func(v runView) bool { return v.Status == pipeline.RunWaiting })
	}

	scrapeUntil(t, base, "stepwise_runs_active 2\n", "stepwise_calls_parked 2\n")
}
