package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// concurrencies are the batch sizes of the throughput chart.
var concurrencies = []int{10, 25, 50, 100, 200}

// plot writes dir/throughput.png (steps per second against the runs in
// flight, the throughput workload at each of concurrencies) and
// dir/latency-cdf.png (the share of steps done within a latency, from the
// latency scenario's samples, or a run of it when it was not chosen).
func (s *stack) plot(ctx context.Context, dir string, results []Result, progress io.Writer) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	byName := func(name string) Scenario {
		return Scenarios[slices.IndexFunc(Scenarios, func(sc Scenario) bool { return sc.Name == name })]
	}
	var tp []point
	for _, c := range concurrencies {
		res, err := s.measure(ctx, byName("throughput"), c, nil)
		if err != nil {
			return fmt.Errorf("throughput at %d runs: %w", c, err)
		}
		tp = append(tp, point{X: float64(c), Y: res.StepsPerS})
		if progress != nil {
			fmt.Fprintf(progress, "plot: throughput at %d runs in flight: %.0f steps/s\n", c, res.StepsPerS)
		}
	}
	if err := save(filepath.Join(dir, "throughput.png"), "Throughput against concurrency", "runs in flight", "agent steps per second", tp); err != nil {
		return err
	}
	var samples []time.Duration
	for _, r := range results {
		if r.Scenario == "latency" {
			samples = r.samples
		}
	}
	if samples == nil {
		sc := byName("latency")
		res, err := s.measure(ctx, sc, sc.defaultRuns, nil)
		if err != nil {
			return fmt.Errorf("latency: %w", err)
		}
		samples = res.samples
	}
	slices.Sort(samples)
	cdf := make([]point, len(samples))
	for i, d := range samples {
		cdf[i] = point{X: float64(d.Microseconds()) / 1000, Y: float64(i+1) / float64(len(samples))}
	}
	return save(filepath.Join(dir, "latency-cdf.png"), "Unloaded step latency", "milliseconds", "share of steps", cdf)
}
