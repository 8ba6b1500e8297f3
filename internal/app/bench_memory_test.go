package app_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/stepwise-run/stepwise/internal/app"
	"github.com/stepwise-run/stepwise/internal/tooling/testinfra"
	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/config"
	"github.com/stepwise-run/stepwise/topics"
)

// memoryConfig is benchConfig with a tool that always asks for approval,
// so a run that calls it parks.
const memoryConfig = `
kafka: {partitions: 8}
stepworker: {concurrency: 256, lease: 30s, sweep_interval: 2s}
toolworker: {concurrency: 256, lease: 30s}
agents:
  assistant:
    model: {provider: script, turns: [{text: "hi"}]}
    tools: [echo, sleep, fail, approve]
tools:
  approve:
    executor: {builtin: echo}
    permission: ask
`

// parksAtOnce calls approve in its first step: the run parks there.
const parksAtOnce = `{"provider":"script","turns":[
	{"text":"I need a person to approve this.","tool_calls":[{"name":"approve","arguments":{"order":"A-1017","amount":250}}]},
	{"text":"done"}]}`

// echoes echoes n bytes in each of three steps, then answers: a run whose
// calls carry what real tools do: 2 KB, a page or a file, kept once where
// it can be (ADR 0030); 200 bytes, a lookup's answer.
func echoes(n int) string {
	turn := `{"text":"step","tool_calls":[{"name":"echo","arguments":{"text":"` + strings.Repeat("x", n) + `"}}]},`
	return `{"provider":"script","turns":[` + strings.Repeat(turn, 3) + `{"text":"done"}]}`
}

// BenchmarkRedisMemory measures the Redis memory one run takes: Redis's
// used_memory before and after a batch of benchRuns runs, divided by the
// runs. "finished" runs threeSteps to its end (3 steps, 4 tool calls, the
// retention not yet passed); "finished-2KB" and "finished-200B" run
// echoes of 2,048 and 200 bytes to their end;
// "parked" stops at its first step with one call awaiting a decision. It
// also reports the share of the run's event stream (MEMORY USAGE of one
// run's keys). See docs/benchmarks.md.
func BenchmarkRedisMemory(b *testing.B) {
	for _, kind := range []string{"finished", "finished-2KB", "finished-200B", "parked"} {
		b.Run(kind, func(b *testing.B) {
			cfg, err := config.Parse([]byte(memoryConfig))
			if err != nil {
				b.Fatal(err)
			}
			// A private redis-server, so nothing else moves its used_memory.
			stack, err := app.InProcess(context.Background(), app.Options{Config: cfg, Redis: testinfra.RedisServer(b), Logger: testLogger()})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = stack.Close() })
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{}, 2)
			go func() { _ = stack.RunStepWorker(ctx); done <- struct{}{} }()
			go func() { _ = stack.RunToolWorker(ctx, nil); done <- struct{}{} }()
			b.Cleanup(func() { cancel(); <-done; <-done })
			results := benchResults(b, stack)
			memoryBatch(b, stack, kind, results) // loads the scripts
			var bytes, events int64
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				before := usedMemory(b, stack.Redis)
				id := memoryBatch(b, stack, kind, results)
				bytes += usedMemory(b, stack.Redis) - before
				events += keyBytes(b, stack, id, "events")
			}
			perRun := float64(bytes) / float64(b.N*benchRuns)
			b.ReportMetric(perRun, "B/run")
			b.ReportMetric(100*float64(events)/float64(b.N)/perRun, "%events")
		})
	}
}

// memoryBatch runs one batch of kind and returns one of its run ids.
func memoryBatch(b *testing.B, stack *app.Stack, kind string, results <-chan string) string {
	b.Helper()
	ctx := context.Background()
	script := map[string]string{"finished": threeSteps, "finished-2KB": echoes(2048), "finished-200B": echoes(200), "parked": parksAtOnce}[kind]
	now := time.Now()
	pending := map[string]bool{}
	var last string
	for i := 0; i < benchRuns; i++ {
		run := pipeline.Run{ID: "mem-" + uuid.NewString(), Agent: "assistant", Model: json.RawMessage(script), RequestHash: "mem"}
		if _, _, err := stack.Store.CreateRun(ctx, run, []pipeline.Message{{Role: pipeline.RoleUser, Content: "go"}}, now); err != nil {
			b.Fatal(err)
		}
		if err := stack.Store.ScheduleSweep(ctx, run.ID, now.Add(30*time.Second)); err != nil {
			b.Fatal(err)
		}
		if err := topics.Publish(stack.Publisher, stack.Names.RunSteps(), topics.StepRequested{Header: topics.Header{RunID: run.ID}}); err != nil {
			b.Fatal(err)
		}
		pending[run.ID], last = true, run.ID
	}
	deadline := time.Now().Add(2 * time.Minute)
	for len(pending) > 0 {
		if time.Now().After(deadline) {
			b.Fatalf("%d runs did not %s", len(pending), kind)
		}
		if kind != "parked" {
			select {
			case id := <-results:
				delete(pending, id)
			case <-time.After(time.Second):
			}
			continue
		}
		for id := range pending {
			if run, err := stack.Store.GetRun(ctx, id); err == nil && run.Status == pipeline.RunWaiting {
				delete(pending, id)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return last
}

// keyBytes is MEMORY USAGE of one key of the run, by its name's suffix.
func keyBytes(b *testing.B, stack *app.Stack, runID, suffix string) int64 {
	b.Helper()
	n, err := stack.Redis.MemoryUsage(context.Background(), "sw:{"+runID+"}:"+suffix).Result()
	if err != nil {
		b.Fatal(err)
	}
	return n
}
