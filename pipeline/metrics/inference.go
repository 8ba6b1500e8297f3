package metrics

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// InferenceModel is a model in batch mode as a scrape reads it from
// Redis: its unfinished provider jobs by state, the requests waiting in
// its open batch and how long the oldest has waited.
type InferenceModel struct {
	Model      string
	Jobs       map[string]int // by state: closed, uploaded, submitted
	Waiting    int
	OldestWait time.Duration
}

var (
	inferenceJobsDesc = prometheus.NewDesc("stepwise_inference_jobs",
		"Provider batch jobs of a model in batch mode not finished yet, by model and state (closed, uploaded, submitted).",
		[]string{"model", "state"}, nil)
	inferenceWaitingDesc = prometheus.NewDesc("stepwise_inference_requests_waiting",
		"Step requests waiting in a model's open batch for its next provider batch job, by model.",
		[]string{"model"}, nil)
	inferenceOldestDesc = prometheus.NewDesc("stepwise_inference_oldest_wait_seconds",
		"How long the oldest request of a model's open batch has waited (0: none waits), by model.",
		[]string{"model"}, nil)
)

// Inference adds the batch inference gauges (stepwise_inference_jobs,
// stepwise_inference_requests_waiting,
// stepwise_inference_oldest_wait_seconds), read by read at each scrape. A
// failed read shows no series (and an error to the scraper), not stale
// numbers. The first registration wins, as Gauge's.
func (s *Set) Inference(read func(ctx context.Context) ([]InferenceModel, error)) {
	if s == nil {
		return
	}
	_ = s.reg.Register(&inferenceCollector{read: read})
}

type inferenceCollector struct {
	mu   sync.Mutex // one read at a time
	read func(ctx context.Context) ([]InferenceModel, error)
}

func (c *inferenceCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- inferenceJobsDesc
	ch <- inferenceWaitingDesc
	ch <- inferenceOldestDesc
}

func (c *inferenceCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	models, err := c.read(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(inferenceJobsDesc, err)
		return
	}
	for _, m := range models {
		for state, n := range m.Jobs {
			ch <- prometheus.MustNewConstMetric(inferenceJobsDesc, prometheus.GaugeValue, float64(n), m.Model, state)
		}
		ch <- prometheus.MustNewConstMetric(inferenceWaitingDesc, prometheus.GaugeValue, float64(m.Waiting), m.Model)
		ch <- prometheus.MustNewConstMetric(inferenceOldestDesc, prometheus.GaugeValue, m.OldestWait.Seconds(), m.Model)
	}
}
