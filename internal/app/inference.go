package app

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/stepwise-run/stepwise/pipeline/config"
	"github.com/stepwise-run/stepwise/pipeline/metrics"
	"github.com/stepwise-run/stepwise/pipeline/model/openai"
)

// batchAgents are the agents whose model has a batch mode (ADR 0071), by
// name.
func batchAgents(c *config.Config) []string {
	var names []string
	for _, name := range slices.Sorted(maps.Keys(c.Agents)) {
		if _, on := openai.BatchOf(c.Agents[name].Model); on {
			names = append(names, name)
		}
	}
	return names
}

// batchModels are the keys of the batch agents' models, sorted, each once.
func batchModels(c *config.Config) []string {
	var keys []string
	for _, name := range batchAgents(c) {
		keys = append(keys, c.Agents[name].Model.Key())
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

// measureInference adds each model in batch mode's open batch and
// unfinished jobs to the metrics, read from Redis at each scrape: a
// configuration without such models adds nothing.
func (s *Stack) measureInference() {
	models := batchModels(s.Config)
	if len(models) == 0 {
		return
	}
	s.Metrics.Inference(func(ctx context.Context) ([]metrics.InferenceModel, error) {
		out := make([]metrics.InferenceModel, 0, len(models))
		now := time.Now()
		for _, m := range models {
			q, err := s.Store.InferenceQueue(ctx, m)
			if err != nil {
				return nil, err
			}
			jobs, err := s.Store.InferenceJobs(ctx, m)
			if err != nil {
				return nil, err
			}
			v := metrics.InferenceModel{Model: m, Waiting: q.Waiting, Jobs: map[string]int{}}
			for _, j := range jobs {
				v.Jobs[string(j.State)]++
			}
			if !q.Since.IsZero() {
				v.OldestWait = max(now.Sub(q.Since), 0)
			}
			out = append(out, v)
		}
		return out, nil
	})
}
