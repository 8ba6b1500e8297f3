package metrics_test

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stepwise-run/stepwise/pipeline/metrics"
)

func TestSet_counts_what_it_is_told_and_a_nil_one_nothing(t *testing.T) {
	var none *metrics.Set
	none.StepCommitted("a", time.Second) // no panic, nothing recorded
	none.Gauge("x", "x", nil, func() float64 { return 1 })

	m := metrics.New()
	m.StepCommitted("assistant", 120*time.Millisecond)
	m.ToolFinished("echo", "failed", time.Millisecond)
	m.Outcome("rejected")
	m.ApprovalRequested("send_email")
	m.RunResult("natural_end")
	m.Request("POST /v1/runs", 201)
	busy := 3.0
	m.Gauge("stepwise_pool_busy_slots", "busy", map[string]string{"worker": "w"}, func() float64 { return busy })
	m.Gauge("stepwise_pool_busy_slots", "busy", map[string]string{"worker": "w"}, func() float64 { return 99 }) // the first wins

	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	for _, want := range []string{
		`stepwise_steps_committed_total{agent="assistant"} 1`,
		`stepwise_inference_duration_seconds_sum{agent="assistant"} 0.12`,
		`stepwise_tool_calls_total{status="failed",tool="echo"} 1`,
		`stepwise_decision_outcomes_total{outcome="rejected"} 1`,
		`stepwise_approval_requests_total{tool="send_email"} 1`,
		`stepwise_run_results_total{reason="natural_end"} 1`,
		`stepwise_http_requests_total{code="201",route="POST /v1/runs"} 1`,
		`stepwise_pool_busy_slots{worker="w"} 3`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("lacks %s", want)
		}
	}
}
