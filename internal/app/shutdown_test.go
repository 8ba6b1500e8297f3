package app_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stepwise-run/stepwise/internal/tooling/testinfra"
	"github.com/stepwise-run/stepwise/pipeline"
)

// A worker that is stopped (SIGTERM) lets what it runs finish within its
// grace period; what does not finish in time is handed over at once, not
// after its lease runs out.

func TestShutdown_a_stopped_tool_worker_finishes_its_call_within_the_grace_period(t *testing.T) {
	in := newInfra(t)
	cfg := strings.Replace(testConfig, "toolworker: {lease: 1s,", "toolworker: {shutdown_grace: 20s, lease: 1s,", 1)
	stack := connect(t, in, parseConfig(t, cfg))
	start(t, stack.RunStepWorker)
	stopTools := start(t, func(ctx context.Context) error { return stack.RunToolWorker(ctx, nil) })
	base := serve(t, stack)

	script := `{"provider":"script","turns":[{"text":"slow","tool_calls":[{"name":"sleep","arguments":{"ms":1200}}]},{"text":"done"}]}`
	id := createRun(t, base, "r-graceful", "assistant", script)
	waitCallRunning(t, base, id)
	stopTools() // returns once the call has committed
	if c := getRun(t, base, id).ToolCalls[0]; c.Status != pipeline.CallSucceeded {
		t.Fatalf("after a graceful stop the call is %s, want succeeded", c.Status)
	}
	start(t, func(ctx context.Context) error { return stack.RunToolWorker(ctx, nil) })
	assertNaturalEnd(t, waitDone(t, base, id, 30*time.Second), 1)
	assertNoEvent(t, stack.Store, id, pipeline.EventToolCallRetried)
}

func TestShutdown_a_call_past_the_grace_period_is_handed_over_before_its_lease_runs_out(t *testing.T) {
	in := newInfra(t)
	// A lease of 60s: a run that finishes within the 30s below was not
	// waiting for it to run out.
	cfg := strings.Replace(testConfig, "toolworker: {lease: 1s,", "toolworker: {shutdown_grace: 100ms, lease: 60s,", 1)
	stack := connect(t, in, parseConfig(t, cfg))
	start(t, stack.RunStepWorker)
	stopTools := start(t, func(ctx context.Context) error { return stack.RunToolWorker(ctx, nil) })
	base := serve(t, stack)

	script := `{"provider":"script","turns":[{"text":"slow","tool_calls":[{"name":"sleep","arguments":{"ms":3000}}]},{"text":"done"}]}`
	id := createRun(t, base, "r-handover", "assistant", script)
	waitCallRunning(t, base, id)
	stopTools()
	start(t, func(ctx context.Context) error { return stack.RunToolWorker(ctx, nil) })
	assertNaturalEnd(t, waitDone(t, base, id, 30*time.Second), 1)
	assertEvent(t, stack.Store, id, pipeline.EventToolCallRetried)
}

func TestShutdown_a_step_past_the_grace_period_is_handed_over_before_its_lease_runs_out(t *testing.T) {
	in := newInfra(t)
	cfg := strings.Replace(testConfig, "stepworker: {lease: 1s,", "stepworker: {shutdown_grace: 100ms, lease: 60s,", 1)
	stack := connect(t, in, parseConfig(t, cfg))
	stopSteps := start(t, stack.RunStepWorker)
	start(t, func(ctx context.Context) error { return stack.RunToolWorker(ctx, nil) })
	base := serve(t, stack)

	id := createRun(t, base, "r-step-handover", "assistant", `{"provider":"script","turns":[{"text":"thought","delay_ms":3000}]}`)
	testinfra.Eventually(t, 20*time.Second, func() bool { return getRun(t, base, id).Status == pipeline.RunRunning },
		func() string { return "the step never started" })
	stopSteps()
	start(t, stack.RunStepWorker)
	assertNaturalEnd(t, waitDone(t, base, id, 30*time.Second), 0)
	assertEvent(t, stack.Store, id, pipeline.EventStepRetried)
}

func waitCallRunning(t *testing.T, base, id string) {
	t.Helper()
	testinfra.Eventually(t, 20*time.Second, func() bool {
		v := getRun(t, base, id)
		return len(v.ToolCalls) == 1 && v.ToolCalls[0].Status == pipeline.CallRunning
	}, func() string { return "the call never ran" })
}

type eventReader interface {
	Events(ctx context.Context, runID, afterID string, count int64) ([]pipeline.Event, error)
}

func assertEvent(t *testing.T, st eventReader, id string, typ pipeline.EventType) {
	t.Helper()
	events, err := st.Events(context.Background(), id, "", 1000)
	if err != nil {
		t.Fatal(err)
	}
	if !hasEvent(events, typ) {
		t.Fatalf("no %s event in %v", typ, eventTypes(events))
	}
}

func assertNoEvent(t *testing.T, st eventReader, id string, typ pipeline.EventType) {
	t.Helper()
	events, err := st.Events(context.Background(), id, "", 1000)
	if err != nil {
		t.Fatal(err)
	}
	if hasEvent(events, typ) {
		t.Fatalf("unexpected %s event in %v", typ, eventTypes(events))
	}
}
