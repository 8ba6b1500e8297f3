package app_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// GET /metrics after a run: the steps, tool calls, results and requests it
// made are counted, in the Prometheus text format.
func TestMetrics_a_run_is_counted_at_metrics(t *testing.T) {
	stack := connect(t, newInfra(t), parseConfig(t, testConfig))
	workers(t, stack)
	base := serve(t, stack)
	id := createRun(t, base, "r-metrics", "assistant", threeSteps)
	assertNaturalEnd(t, waitDone(t, base, id, 30*time.Second), 2)

	var text string
	eventually(t, 10*time.Second, func() bool {
		res, err := http.Get(base + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		text = string(b)
		return strings.Contains(text, `stepwise_run_results_total{reason="natural_end"} 1`)
	}, func() string { return "no run result counted:\n" + text })
	for _, want := range []string{
		`stepwise_steps_committed_total{agent="assistant"} 3`,
		`stepwise_tool_calls_total{status="succeeded",tool="echo"} 3`,
		`stepwise_tool_calls_total{status="succeeded",tool="sleep"} 1`,
		`stepwise_inference_duration_seconds_count{agent="assistant"} 3`,
		`stepwise_http_requests_total{code="201",route="POST /v1/runs"} 1`,
		`stepwise_pool_busy_slots{worker="stepworker"}`,
		`go_goroutines`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}
