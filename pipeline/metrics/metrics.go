package metrics

import (
	"context"
	"maps"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/stepwise-run/stepwise/pipeline"
)

// Set is the metrics of one process. Safe for concurrent use.
type Set struct {
	reg           *prometheus.Registry
	steps         *prometheus.CounterVec
	inference     *prometheus.HistogramVec
	toolCalls     *prometheus.CounterVec
	toolTime      *prometheus.HistogramVec
	outcomes      *prometheus.CounterVec
	approvals     *prometheus.CounterVec
	runs          *prometheus.CounterVec
	requests      *prometheus.CounterVec
	deferred      *prometheus.CounterVec
	callsDeferred *prometheus.CounterVec
	tokens        *prometheus.CounterVec
	cost          *prometheus.CounterVec
	lag           lagCollector
	retries       *prometheus.CounterVec
	stopped       *prometheus.CounterVec
	redrives      *prometheus.CounterVec
	dead          *prometheus.CounterVec
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
		approvals: f(prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "stepwise_approval_requests_total", Help: "Approval requests published, by tool.",
		}, []string{"tool"})).(*prometheus.CounterVec),
		runs: f(prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "stepwise_run_results_total", Help: "Run results published, by termination reason.",
		}, []string{"reason"})).(*prometheus.CounterVec),
		requests: f(prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "stepwise_http_requests_total", Help: "Gateway requests answered, by route and status code.",
		}, []string{"route", "code"})).(*prometheus.CounterVec),
		deferred: f(prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "stepwise_steps_deferred_total", Help: "Steps deferred by a limit of their model (limits:), by model.",
		}, []string{"model"})).(*prometheus.CounterVec),
		callsDeferred: f(prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "stepwise_calls_deferred_total", Help: "Tool calls deferred by a limit of their tool (limits.tools), by tool.",
		}, []string{"tool"})).(*prometheus.CounterVec),
		cost: f(prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "stepwise_cost_usd_total", Help: "What the models' tokens cost at the configured prices (budgets.prices), by model.",
		}, []string{"model"})).(*prometheus.CounterVec),
		tokens: f(prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "stepwise_tokens_total", Help: "Tokens the models reported, by model and kind (input, output).",
		}, []string{"model", "kind"})).(*prometheus.CounterVec),
		retries: f(prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "stepwise_tool_retries_total", Help: "Tool executions tried again after a retryable error, by tool.",
		}, []string{"tool"})).(*prometheus.CounterVec),
		stopped: f(prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "stepwise_tool_calls_stopped_total", Help: "Tool executions stopped because their call was cancelled while they ran, by tool.",
		}, []string{"tool"})).(*prometheus.CounterVec),
		redrives: f(prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "stepwise_lease_redrives_total", Help: "Steps and tool calls requested again because their worker's lease ran out, by kind (step, call).",
		}, []string{"kind"})).(*prometheus.CounterVec),
		dead: f(prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "stepwise_dead_letters_total", Help: "Messages this process sent to the dead-letter topic, by the topic they came from.",
		}, []string{"topic"})).(*prometheus.CounterVec),
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

// PoolBusy shows the busy slots of a worker's pool (steps inferring and
// fan-ins reconciling; tools executing) as stepwise_pool_busy_slots, by
// worker. One help text for every worker: a registry refuses a metric
// whose help differs from its first registration's.
func (s *Set) PoolBusy(worker string, busy func() int) {
	s.Gauge("stepwise_pool_busy_slots", "Slots of the worker's pool in use.", map[string]string{"worker": worker},
		func() float64 { return float64(busy()) })
}

// StepDeferred counts a step a limit of model held back.
func (s *Set) StepDeferred(model string) {
	if s == nil {
		return
	}
	s.deferred.WithLabelValues(model).Inc()
}

// CallDeferred counts a tool call a limit of its tool held back.
func (s *Set) CallDeferred(tool string) {
	if s == nil {
		return
	}
	s.callsDeferred.WithLabelValues(tool).Inc()
}

// Tokens counts the tokens an inference of model used, and their cost
// when the model has a price.
func (s *Set) Tokens(model string, u pipeline.Usage) {
	if s == nil {
		return
	}
	s.tokens.WithLabelValues(model, "input").Add(float64(u.InputTokens))
	s.tokens.WithLabelValues(model, "output").Add(float64(u.OutputTokens))
	if u.CostUSD > 0 {
		s.cost.WithLabelValues(model).Add(u.CostUSD)
	}
}

// ToolRetried counts a retry of a tool execution.
func (s *Set) ToolRetried(tool string) {
	if s == nil {
		return
	}
	s.retries.WithLabelValues(tool).Inc()
}

// ToolStopped counts a tool execution stopped because its call was
// cancelled while it ran.
func (s *Set) ToolStopped(tool string) {
	if s == nil {
		return
	}
	s.stopped.WithLabelValues(tool).Inc()
}

// Redriven counts n steps or calls (kind) requested again after their
// lease ran out.
func (s *Set) Redriven(kind string, n int) {
	if s == nil || n == 0 {
		return
	}
	s.redrives.WithLabelValues(kind).Add(float64(n))
}

// DeadLettered counts a message of topic sent to the dead-letter topic.
func (s *Set) DeadLettered(topic string) {
	if s == nil {
		return
	}
	s.dead.WithLabelValues(topic).Inc()
}

// Lag is a consumer group's lag on one partition.
type Lag struct {
	Topic     string
	Partition int32
	Messages  int64
}

// ConsumerLag adds group to stepwise_consumer_lag_messages{group, topic,
// partition}, read by read at each scrape.
func (s *Set) ConsumerLag(group string, read func(ctx context.Context) ([]Lag, error)) {
	if s == nil {
		return
	}
	s.lag.mu.Lock()
	defer s.lag.mu.Unlock()
	if s.lag.groups == nil {
		s.reg.MustRegister(&s.lag)
		s.lag.groups = map[string]func(ctx context.Context) ([]Lag, error){}
	}
	s.lag.groups[group] = read
}

var lagDesc = prometheus.NewDesc("stepwise_consumer_lag_messages",
	"Messages of a topic's partition the consumer group has not committed yet (what KEDA's kafka scaler scales on).",
	[]string{"group", "topic", "partition"}, nil)

// lagCollector reads each group's lag when scraped; a failed read shows
// no series for the group (and an error to the scraper), not stale numbers.
type lagCollector struct {
	mu     sync.Mutex
	groups map[string]func(ctx context.Context) ([]Lag, error)
}

func (c *lagCollector) Describe(ch chan<- *prometheus.Desc) { ch <- lagDesc }

func (c *lagCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	groups := maps.Clone(c.groups)
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for group, read := range groups {
		lags, err := read(ctx)
		if err != nil {
			ch <- prometheus.NewInvalidMetric(lagDesc, err)
			continue
		}
		for _, l := range lags {
			ch <- prometheus.MustNewConstMetric(lagDesc, prometheus.GaugeValue, float64(l.Messages),
				group, l.Topic, strconv.Itoa(int(l.Partition)))
		}
	}
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

// ApprovalRequested counts a published approval request of a call of tool.
func (s *Set) ApprovalRequested(tool string) {
	if s != nil {
		s.approvals.WithLabelValues(tool).Inc()
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
