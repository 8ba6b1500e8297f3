package app_test

import (
	"context"
	"encoding/json"
	"sort"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/stepwise-run/stepwise/internal/app"
	"github.com/stepwise-run/stepwise/internal/tooling/testinfra"
	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/config"
	"github.com/stepwise-run/stepwise/topics"
)

// benchWaiting is how many suspended runs one iteration decides at once.
const benchWaiting = 200

const benchApprovalsConfig = `
kafka: {partitions: 8}
stepworker: {concurrency: 256, lease: 30s, sweep_interval: 2s}
toolworker: {concurrency: 256, lease: 30s}
agents:
  approvals:
    model: {provider: script, turns: [{text: "hi"}]}
    tools: [approve_me]
tools:
  approve_me: {executor: {builtin: echo}, permission: ask}
`

// BenchmarkDecisions measures how fast parked runs come back: benchWaiting
// runs each park one call that needs approval; once all of them wait, one
// decision per run is published to the decisions topic at once (as an
// outside system would), and each run's latency is the time from its
// decision's publish to the start of its next step (the resumed call
// replayed, its result fanned in, the next inference begun), read from the
// run's event log. Reported: p50 and p99 of that latency and the time until
// the last run resumed. See docs/benchmarks.md.
func BenchmarkDecisions(b *testing.B) {
	cfg, err := config.Parse([]byte(benchApprovalsConfig))
	if err != nil {
		b.Fatal(err)
	}
	stack, err := app.Connect(context.Background(), app.Options{
		Config: cfg, Kafka: testinfra.Kafka(b)[0], Redis: testinfra.Redis(b), Logger: testLogger(),
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = stack.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{}, 2)
	go func() { _ = stack.RunStepWorker(ctx); done <- struct{}{} }()
	go func() { _ = stack.RunToolWorker(ctx, nil); done <- struct{}{} }()
	b.Cleanup(func() { cancel(); <-done; <-done })

	var lat []time.Duration
	var total time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		ids := parkRuns(b, stack)
		b.StartTimer()
		l, t := decideAll(b, stack, ids)
		lat = append(lat, l...)
		total += t
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(ms(lat[len(lat)/2]), "p50-ms")
	b.ReportMetric(ms(lat[len(lat)*99/100]), "p99-ms")
	b.ReportMetric(ms(total)/float64(b.N), "all-resumed-ms")
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// parkRuns starts benchWaiting runs and waits until each has parked.
func parkRuns(b *testing.B, stack *app.Stack) []string {
	b.Helper()
	ctx := context.Background()
	script := json.RawMessage(`{"provider":"script","turns":[{"text":"asking","tool_calls":[{"id":"A","name":"approve_me","arguments":{"n":1}}]},{"text":"done"}]}`)
	ids := make([]string, benchWaiting)
	now := time.Now()
	for i := range ids {
		ids[i] = "bench-" + uuid.NewString()
		run := pipeline.Run{ID: ids[i], Agent: "approvals", Model: script, RequestHash: "bench"}
		if _, _, err := stack.Store.CreateRun(ctx, run, []pipeline.Message{{Role: "user", Content: "go"}}, now); err != nil {
			b.Fatal(err)
		}
		if err := topics.Publish(stack.Publisher, stack.Names.RunSteps(), topics.StepRequested{Header: topics.Header{RunID: ids[i]}}); err != nil {
			b.Fatal(err)
		}
	}
	deadline := time.Now().Add(2 * time.Minute)
	for _, id := range ids {
		for {
			run, err := stack.Store.GetRun(ctx, id)
			if err != nil {
				b.Fatal(err)
			}
			if run.Status == pipeline.RunWaiting {
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("run %s did not park: %s", id, run.Status)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	return ids
}

// decideAll publishes one decision per run at once and returns each run's
// latency to its next step and the time until the last one got there.
func decideAll(b *testing.B, stack *app.Stack, ids []string) ([]time.Duration, time.Duration) {
	b.Helper()
	ctx := context.Background()
	sent := make(map[string]time.Time, len(ids))
	start := time.Now()
	for _, id := range ids {
		sent[id] = time.Now()
		if err := topics.Publish(stack.Publisher, stack.Names.Decisions(), topics.Decision{
			Header: topics.Header{RunID: id}, DecisionID: "bench-" + id, CallID: "A", Action: topics.ActionResume, DecidedBy: "bench",
		}); err != nil {
			b.Fatal(err)
		}
	}
	lat := make([]time.Duration, 0, len(ids))
	var last time.Time
	deadline := time.Now().Add(2 * time.Minute)
	for _, id := range ids {
		for {
			at, ok := nextStepStarted(b, stack, ctx, id)
			if ok {
				lat = append(lat, at.Sub(sent[id]))
				if at.After(last) {
					last = at
				}
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("run %s did not resume", id)
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
	return lat, last.Sub(start)
}

func nextStepStarted(b *testing.B, stack *app.Stack, ctx context.Context, id string) (time.Time, bool) {
	events, err := stack.Store.Events(ctx, id, "", 0)
	if err != nil {
		b.Fatal(err)
	}
	for _, e := range events {
		if e.Type == pipeline.EventStepStarted && e.Step == 1 {
			return e.At, true
		}
	}
	return time.Time{}, false
}
