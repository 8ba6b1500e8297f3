package app_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/stepwise-run/stepwise/internal/app"
	"github.com/stepwise-run/stepwise/internal/tooling/testinfra"
	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/config"
	"github.com/stepwise-run/stepwise/topics"
)

// benchRuns is the batch of one benchmark iteration: that many concurrent
// runs of threeSteps (3 steps, 2 tool calls in each of the first two).
const benchRuns = 200

// benchConfig is the test configuration with production-like leases (no
// sweeper churn during the measurement) and a pool big enough for the batch.
const benchConfig = `
kafka: {partitions: 8}
stepworker: {concurrency: 256, lease: 30s, sweep_interval: 2s}
toolworker: {concurrency: 256, lease: 30s}
agents:
  assistant:
    model: {provider: script, turns: [{text: "hi"}]}
    tools: [echo, sleep, fail]
`

// BenchmarkPipeline measures agent steps per second for a batch of
// concurrent runs with the script model and the echo and sleep tools: once
// through Kafka (the embedded kfake broker, over the Kafka protocol) and once
// with the same handlers, store and Redis connected by an in-process channel,
// no broker. One iteration is one batch, created straight in the store and
// requested on run-steps (the gateway's work, without HTTP), and finished
// when every run's result has arrived on run-results. See docs/benchmarks.md.
func BenchmarkPipeline(b *testing.B) {
	for _, transport := range []string{"kafka", "inprocess"} {
		b.Run(transport, func(b *testing.B) {
			stack := benchStack(b, transport)
			results := benchResults(b, stack)
			steps := 0
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				steps += benchBatch(b, stack, results)
			}
			b.ReportMetric(float64(steps)/b.Elapsed().Seconds(), "steps/s")
			b.ReportMetric(float64(benchRuns*b.N)/b.Elapsed().Seconds(), "runs/s")
		})
	}
}

func benchStack(b *testing.B, transport string) *app.Stack {
	b.Helper()
	cfg, err := config.Parse([]byte(benchConfig))
	if err != nil {
		b.Fatal(err)
	}
	o := app.Options{Config: cfg, Redis: testinfra.Redis(b), Logger: testLogger()}
	ctx := context.Background()
	var stack *app.Stack
	if transport == "kafka" {
		o.Kafka = testinfra.Kafka(b)[0]
		stack, err = app.Connect(ctx, o)
	} else {
		stack, err = app.InProcess(ctx, o)
	}
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = stack.Close() })
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{}, 2)
	go func() { _ = stack.RunStepWorker(ctx); done <- struct{}{} }()
	go func() { _ = stack.RunToolWorker(ctx, nil); done <- struct{}{} }()
	b.Cleanup(func() { cancel(); <-done; <-done })
	return stack
}

// benchResults follows run-results and sends each finished run id.
func benchResults(b *testing.B, stack *app.Stack) <-chan string {
	b.Helper()
	sub, err := stack.Subscriber("bench-" + uuid.NewString())
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(func() { cancel(); _ = sub.Close() })
	msgs, err := sub.Subscribe(ctx, stack.Names.RunResults())
	if err != nil {
		b.Fatal(err)
	}
	out := make(chan string, benchRuns)
	go func() {
		for m := range msgs {
			if res, err := topics.Decode[topics.RunResult](m.Payload); err == nil {
				out <- res.RunID
			}
			m.Ack()
		}
	}()
	return out
}

// benchBatch runs one batch and returns how many steps it took.
func benchBatch(b *testing.B, stack *app.Stack, results <-chan string) int {
	b.Helper()
	ctx := context.Background()
	now := time.Now()
	pending := map[string]bool{}
	for i := 0; i < benchRuns; i++ {
		run := pipeline.Run{ID: "bench-" + uuid.NewString(), Agent: "assistant", Model: json.RawMessage(threeSteps), RequestHash: "bench"}
		if _, _, err := stack.Store.CreateRun(ctx, run, []pipeline.Message{{Role: pipeline.RoleUser, Content: "go"}}, now); err != nil {
			b.Fatal(err)
		}
		if err := stack.Store.ScheduleSweep(ctx, run.ID, now.Add(30*time.Second)); err != nil {
			b.Fatal(err)
		}
		if err := topics.Publish(stack.Publisher, stack.Names.RunSteps(), topics.StepRequested{Header: topics.Header{RunID: run.ID}}); err != nil {
			b.Fatal(err)
		}
		pending[run.ID] = true
	}
	timeout := time.After(2 * time.Minute)
	for len(pending) > 0 {
		select {
		case id := <-results:
			delete(pending, id)
		case <-timeout:
			b.Fatalf("%d runs did not finish", len(pending))
		}
	}
	return 3 * benchRuns
}
