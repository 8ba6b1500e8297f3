package app_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stepwise-run/stepwise/internal/tooling/testinfra"
	"github.com/stepwise-run/stepwise/pipeline"
)

// wideScript is a model whose first turn asks for n parallel calls of
// tool with arguments args, then answers.
func wideScript(n int, tool, args string) string {
	calls := make([]string, n)
	for i := range calls {
		calls[i] = fmt.Sprintf(`{"name":%q,"arguments":%s}`, tool, args)
	}
	return `{"provider":"script","turns":[{"text":"wide","tool_calls":[` + strings.Join(calls, ",") + `]},{"text":"done"}]}`
}

// startedOf returns each call's tool_call.started and tool_call.retried
// events, by call id.
func startedOf(t *testing.T, events []pipeline.Event) map[string][]pipeline.Event {
	t.Helper()
	out := map[string][]pipeline.Event{}
	for _, e := range events {
		if e.Type == pipeline.EventToolCallStarted || e.Type == pipeline.EventToolCallRetried {
			out[e.CallID] = append(out[e.CallID], e)
		}
	}
	return out
}

// A step's calls, every request delivered twice: the first request's
// claim takes the whole step (ADR 0025), and each call runs once.
func TestSiblings_a_wide_step_is_claimed_at_once_and_each_call_runs_once(t *testing.T) {
	in := newInfra(t)
	stack := connect(t, in, parseConfig(t, testConfig))
	stack.Publisher = testinfra.Duplicating{Publisher: stack.Publisher}
	workers(t, stack)
	base := serve(t, stack)

	const n = 6
	id := createRun(t, base, "r-wide", "assistant", wideScript(n, "echo", `{"n":1}`))
	v := waitDone(t, base, id, 30*time.Second)
	assertNaturalEnd(t, v, 1)
	for _, c := range v.ToolCalls {
		if c.Status != pipeline.CallSucceeded {
			t.Fatalf("call %+v", c)
		}
	}
	events, err := stack.Store.Events(context.Background(), id, "", 1000)
	if err != nil {
		t.Fatal(err)
	}
	started := startedOf(t, events)
	if len(started) != n {
		t.Fatalf("%d calls started, want %d: %v", len(started), n, eventTypes(events))
	}
	for callID, evs := range started {
		if len(evs) != 1 || evs[0].Type != pipeline.EventToolCallStarted {
			t.Fatalf("call %s started %d times: %+v", callID, len(evs), evs)
		}
	}
	claimedTogether(t, started)
}

// claimedTogether fails unless the first claims of the calls in started
// were one claim's: they share its time.
func claimedTogether(t *testing.T, started map[string][]pipeline.Event) {
	t.Helper()
	var first time.Time
	for callID, evs := range started {
		switch {
		case first.IsZero():
			first = evs[0].At
		case !evs[0].At.Equal(first):
			t.Fatalf("call %s started at %v, another at %v: not claimed together", callID, evs[0].At, first)
		}
	}
}

// A tool worker stopped while it runs a step's calls it claimed together
// gives every one of them up, and the next worker runs them all.
func TestSiblings_calls_claimed_together_are_taken_over_when_their_worker_dies(t *testing.T) {
	in := newInfra(t)
	stack := connect(t, in, parseConfig(t, abandoning))
	start(t, stack.RunStepWorker)
	stopFirst := start(t, func(ctx context.Context) error { return stack.RunToolWorker(ctx, nil) })
	base := serve(t, stack)

	id := createRun(t, base, "r-wide-dies", "assistant", wideScript(3, "sleep", `{"ms":1500}`))
	testinfra.Eventually(t, 20*time.Second, func() bool {
		v := getRun(t, base, id)
		running := 0
		for _, c := range v.ToolCalls {
			if c.Status == pipeline.CallRunning {
				running++
			}
		}
		return running == 3
	}, func() string { return "the calls never ran" })
	stopFirst()
	start(t, func(ctx context.Context) error { return stack.RunToolWorker(ctx, nil) })

	v := waitDone(t, base, id, 30*time.Second)
	assertNaturalEnd(t, v, 1)
	events, err := stack.Store.Events(context.Background(), id, "", 1000)
	if err != nil {
		t.Fatal(err)
	}
	started := startedOf(t, events)
	claimedTogether(t, started)
	for callID, evs := range started {
		if len(evs) != 2 || evs[1].Type != pipeline.EventToolCallRetried {
			t.Fatalf("call %s: %+v, want started then retried", callID, evs)
		}
	}
	for _, c := range v.ToolCalls {
		if c.Status != pipeline.CallSucceeded {
			t.Fatalf("call %+v", c)
		}
	}
}

// The calls of a tool with limits take a slot of their limit before their
// claim: a claim leaves them to their own requests, and the limit holds
// within one step.
func TestSiblings_calls_of_a_limited_tool_are_not_claimed_together(t *testing.T) {
	in := newInfra(t)
	stack := connect(t, in, parseConfig(t, testConfig+"limits:\n  tools:\n    sleep: {concurrency: 1}\n"))
	workers(t, stack)
	base := serve(t, stack)

	id := createRun(t, base, "r-wide-limited", "assistant", wideScript(3, "sleep", `{"ms":100}`))
	assertNaturalEnd(t, waitDone(t, base, id, 30*time.Second), 1)
	events, err := stack.Store.Events(context.Background(), id, "", 1000)
	if err != nil {
		t.Fatal(err)
	}
	if peak := peakExecutions(events); peak != 1 {
		t.Fatalf("%d calls of sleep ran at once; its limit is 1", peak)
	}
}
