package app_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stepwise-run/stepwise/internal/app"
	"github.com/stepwise-run/stepwise/pipeline"
)

// modelLimitConfig is a synthetic model limited to `concurrency` inferences at
// once, recording each inference's start and end in record.
func modelLimitConfig(record string, concurrency int) string {
	return fmt.Sprintf(`
kafka: {partitions: 4}
stepworker: {lease: 2s, sweep_interval: 100ms, dispatch_timeout: 3s, max_attempts: 3, concurrency: 64}
toolworker: {lease: 2s, default_timeout: 10s}
limits:
  models:
    synthetic: {concurrency: %d}
agents:
  limited:
    model: {provider: synthetic, latency_ms: 40, tool_calls_per_step: 1, tool: echo, steps: 1, record: %q}
    tools: [echo]
`, concurrency, record)
}

// maxInFlight reads a synthetic model's record and returns how many
// inferences ran at once at most, and how many there were.
func maxInFlight(t *testing.T, record string) (peak, total int) {
	t.Helper()
	f, err := os.Open(record)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	type mark struct {
		at    int64
		delta int
	}
	var marks []mark
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		what, at, _ := strings.Cut(sc.Text(), " ")
		ns, err := strconv.ParseInt(at, 10, 64)
		if err != nil {
			t.Fatalf("record line %q: %v", sc.Text(), err)
		}
		if what == "start" {
			marks = append(marks, mark{ns, +1})
			total++
		} else {
			marks = append(marks, mark{ns, -1})
		}
	}
	// At the same instant an end counts before a start.
	slices.SortFunc(marks, func(a, b mark) int {
		if a.at != b.at {
			return int(a.at - b.at)
		}
		return a.delta - b.delta
	})
	n := 0
	for _, m := range marks {
		n += m.delta
		peak = max(peak, n)
	}
	return peak, total
}

// With a model limit of 3 inferences at once, 200 runs through two step
// worker processes (64 pool slots each) never have more than 3 inferences
// in flight together, as the synthetic model counts them, and all finish.
func TestLimits_a_model_limit_holds_across_two_step_worker_processes(t *testing.T) {
	bin := programs(t)
	in := newInfra(t)
	record := filepath.Join(t.TempDir(), "inferences")
	yaml := modelLimitConfig(record, 3)
	cfgPath := writeConfig(t, yaml)
	stack := connect(t, in, parseConfig(t, yaml))
	base := serve(t, stack)
	start(t, func(ctx context.Context) error { return stack.RunToolWorker(ctx, nil) })
	env := []string{app.EnvKafkaBrokers + "=" + strings.Join(in.brokers, ","), app.EnvRedisURL + "=" + in.redisURL}
	startProcess(t, filepath.Join(bin, "stepworker"), append(env, "STEPWISE_INSTANCE_ID=limits-a"), "--config", cfgPath)
	startProcess(t, filepath.Join(bin, "stepworker"), append(env, "STEPWISE_INSTANCE_ID=limits-b"), "--config", cfgPath)

	items := make([]map[string]any, 200)
	for i := range items {
		items[i] = map[string]any{"run_id": fmt.Sprintf("limited-%03d", i), "agent": "limited", "input": "go"}
	}
	_, view := sendBatch(t, base, items, "", 3*time.Minute)
	if view.Reasons["natural_end"] != 200 {
		t.Fatalf("the runs ended %+v; limited-000: %+v", view.Reasons, getRun(t, base, "limited-000").Termination)
	}

	peak, total := maxInFlight(t, record)
	if total < 400 { // two steps a run
		t.Fatalf("%d inferences recorded, want at least 400", total)
	}
	if peak > 3 {
		t.Fatalf("%d inferences ran at once, the limit is 3", peak)
	}
	if peak < 3 {
		t.Fatalf("at most %d inferences ran at once: the limit was never reached, so this test proves nothing", peak)
	}
	deferred := 0
	for i := range 20 {
		for _, ev := range runEvents(t, stack, fmt.Sprintf("limited-%03d", i)) {
			if ev.Type == pipeline.EventStepDeferred {
				deferred++
			}
		}
	}
	if deferred == 0 {
		t.Fatal("no step was deferred: the limit held nothing back")
	}
	t.Logf("200 runs, %d inferences, at most %d at once; %d deferrals in the first 20 runs", total, peak, deferred)
}

// With a tool limit of 2 calls at once, 12 runs whose one call sleeps
// 150 ms, through two tool worker processes, never have more than 2 of
// those calls running together (their tool_call.started and
// tool_call.finished events bound each execution), and all finish.
func TestLimits_a_tool_limit_holds_across_two_tool_worker_processes(t *testing.T) {
	bin := programs(t)
	in := newInfra(t)
	yaml := testConfig + "limits:\n  tools:\n    sleep: {concurrency: 2}\n"
	cfgPath := writeConfig(t, yaml)
	stack := connect(t, in, parseConfig(t, yaml))
	base := serve(t, stack)
	start(t, stack.RunStepWorker)
	env := []string{app.EnvKafkaBrokers + "=" + strings.Join(in.brokers, ","), app.EnvRedisURL + "=" + in.redisURL}
	startProcess(t, filepath.Join(bin, "toolworker"), append(env, "STEPWISE_INSTANCE_ID=tools-a"), "--config", cfgPath)
	startProcess(t, filepath.Join(bin, "toolworker"), append(env, "STEPWISE_INSTANCE_ID=tools-b"), "--config", cfgPath)

	sleepy := `{"provider":"script","turns":[{"text":"wait","tool_calls":[{"name":"sleep","arguments":{"ms":150}}]},{"text":"done"}]}`
	ids := make([]string, 12)
	for i := range ids {
		ids[i] = createRun(t, base, fmt.Sprintf("tool-limited-%02d", i), "assistant", sleepy)
	}
	var events []pipeline.Event
	for _, id := range ids {
		assertNaturalEnd(t, waitDone(t, base, id, 90*time.Second), 1)
		events = append(events, runEvents(t, stack, id)...)
	}
	peak := peakExecutions(events)
	if peak != 2 {
		t.Fatalf("at most %d calls of sleep ran at once; the limit is 2 and 12 calls should have reached it", peak)
	}
}

// peakExecutions is the most tool executions that ran at once in events
// (of one run or several): each runs from its tool_call.started or
// tool_call.retried to its tool_call.finished.
func peakExecutions(events []pipeline.Event) int {
	type mark struct {
		at    time.Time
		delta int
	}
	var marks []mark
	for _, ev := range events {
		switch ev.Type {
		case pipeline.EventToolCallStarted, pipeline.EventToolCallRetried:
			marks = append(marks, mark{ev.At, +1})
		case pipeline.EventToolCallFinished:
			marks = append(marks, mark{ev.At, -1})
		}
	}
	slices.SortFunc(marks, func(a, b mark) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return a.delta - b.delta // an end before a start at the same instant
	})
	peak, n := 0, 0
	for _, m := range marks {
		n += m.delta
		peak = max(peak, n)
	}
	return peak
}
