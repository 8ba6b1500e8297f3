package metrics

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Set is the metrics of one process. Safe for concurrent use.
type Set struct {
	reg       *prometheus.Registry
	steps     *prometheus.CounterVec
	inference *prometheus.HistogramVec
	toolCalls *prometheus.CounterVec
	toolTime  *prometheus.HistogramVec
	outcomes  *prometheus.CounterVec
	runs      *prometheus.CounterVec
	requests  *prometheus.CounterVec
}

// New returns a Set on a registry of its own, with the Go runtime's and
// the process's metrics beside stepwise's.
func New() *Set {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	f := func(c prometheus.Collector) prometheus.Collector { reg.MustRegister(c); return c }
	buckets := []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}
	return &Set{
		reg: reg,
		steps: f(prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "stepwise_steps_committed_total", Help: "Agent steps whose inference was committed, by agent.",
		}, []string{"agent"})).(*prometheus.CounterVec),
		inference: f(prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "stepwise_inference_duration_seconds", Help: "Time from a step's claim to its commit, by agent.", Buckets: buckets,
		}, []string{"agent"})).(*prometheus.HistogramVec),
		toolCalls: f(prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "stepwise_tool_calls_total", Help: "Tool executions finished, by tool and status (succeeded, failed, suspended).",
		}, []string{"tool", "status"})).(*prometheus.CounterVec),
		toolTime: f(prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "stepwise_tool_duration_seconds", Help: "Time a tool execution took, by tool.", Buckets: buckets,
		}, []string{"tool"})).(*prometheus.HistogramVec),
		outcomes: f(prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "stepwise_decision_outcomes_total", Help: "Decision outcomes published, by outcome (applied, held, rejected).",
		}, []string{"outcome"})).(*prometheus.CounterVec),
		runs: f(prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "stepwise_run_results_total", Help: "Run results published, by termination reason.",
		}, []string{"reason"})).(*prometheus.CounterVec),
		requests: f(prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "stepwise_http_requests_total", Help: "Gateway requests answered, by route and status code.",
		}, []string{"route", "code"})).(*prometheus.CounterVec),
	}
}

// Handler serves the metrics in the Prometheus text format.
func (s *Set) Handler() http.Handler {
	return promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{})
}

// StepCommitted counts a committed step of agent and the time since its
// claim.
func (s *Set) StepCommitted(agent string, took time.Duration) {
	if s == nil {
		return
	}
	s.steps.WithLabelValues(agent).Inc()
	s.inference.WithLabelValues(agent).Observe(took.Seconds())
}

// ToolFinished counts a tool execution's outcome and its time.
func (s *Set) ToolFinished(tool, status string, took time.Duration) {
	if s == nil {
		return
	}
	s.toolCalls.WithLabelValues(tool, status).Inc()
	s.toolTime.WithLabelValues(tool).Observe(took.Seconds())
}

// Outcome counts a published decision outcome.
func (s *Set) Outcome(outcome string) {
	if s != nil {
		s.outcomes.WithLabelValues(outcome).Inc()
	}
}

// RunResult counts a published run result.
func (s *Set) RunResult(reason string) {
	if s != nil {
		s.runs.WithLabelValues(reason).Inc()
	}
}

// Request counts an answered gateway request.
func (s *Set) Request(route string, code int) {
	if s != nil {
		s.requests.WithLabelValues(route, strconv.Itoa(code)).Inc()
	}
}

// Gauge registers a gauge whose value f gives at each scrape (a pool's
// busy slots, say), with constant labels. The first registration of a name
// and labels wins: a worker started again in the same process keeps the
// first one's gauge.
func (s *Set) Gauge(name, help string, labels map[string]string, f func() float64) {
	if s == nil {
		return
	}
	_ = s.reg.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help, ConstLabels: labels}, f))
}
