package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/stepwise-run/stepwise/internal/tooling/testinfra"
	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/topics"
)

// threeSteps: two parallel calls in each of the first two steps, then an answer.
const threeSteps = `{"provider":"script","turns":[
	{"text":"step one","tool_calls":[{"name":"echo","arguments":{"n":1}},{"name":"echo","arguments":{"n":2}}]},
	{"text":"step two","tool_calls":[{"name":"sleep","arguments":{"ms":30}},{"name":"echo","arguments":{"n":3}}]},
	{"text":"done"}]}`

func threeStepsHistory() []pipeline.Message {
	call := func(id, name, args string) pipeline.ToolCallRequest {
		return pipeline.ToolCallRequest{ID: id, Name: name, Arguments: json.RawMessage(args)}
	}
	return []pipeline.Message{
		{Role: "user", Content: "go"},
		{Role: "assistant", Content: "step one", ToolCalls: []pipeline.ToolCallRequest{call("call_0_0", "echo", `{"n":1}`), call("call_0_1", "echo", `{"n":2}`)}},
		{Role: "tool", ToolCallID: "call_0_0", Content: `{"n":1}`},
		{Role: "tool", ToolCallID: "call_0_1", Content: `{"n":2}`},
		{Role: "assistant", Content: "step two", ToolCalls: []pipeline.ToolCallRequest{call("call_1_0", "sleep", `{"ms":30}`), call("call_1_1", "echo", `{"n":3}`)}},
		{Role: "tool", ToolCallID: "call_1_0", Content: `{"slept_ms":30}`},
		{Role: "tool", ToolCallID: "call_1_1", Content: `{"n":3}`},
		{Role: "assistant", Content: "done"},
	}
}

// canonical re-encodes v through a generic value, so key order and spacing
// do not matter.
func canonical(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var g any
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
	out, _ := json.MarshalIndent(g, "", " ")
	return string(out)
}

func assertHistory(t *testing.T, got, want []pipeline.Message) {
	t.Helper()
	if g, w := canonical(t, got), canonical(t, want); g != w {
		t.Fatalf("message history:\n%s\nwant:\n%s", g, w)
	}
}

func assertNaturalEnd(t *testing.T, v runView, step int) {
	t.Helper()
	if v.Status != pipeline.RunDone || v.Termination.Reason != pipeline.ReasonNaturalEnd || v.Step != step {
		t.Fatalf("run ended %s/%s at step %d (%s), want done/natural_end at step %d", v.Status, v.Termination.Reason, v.Step, v.Termination.Detail, step)
	}
}

func TestPipeline_a_three_step_run_with_parallel_calls_ends_naturally_with_the_exact_history(t *testing.T) {
	in := newInfra(t)
	stack := connect(t, in, parseConfig(t, testConfig))
	workers(t, stack)
	base := serve(t, stack)

	id := createRun(t, base, "r-parallel", "assistant", threeSteps)
	v := waitDone(t, base, id, 30*time.Second)
	assertNaturalEnd(t, v, 2)
	assertHistory(t, getMessages(t, base, id), threeStepsHistory())
	if len(v.ToolCalls) != 4 {
		t.Fatalf("tool calls: %+v", v.ToolCalls)
	}
	for _, c := range v.ToolCalls {
		if c.Status != pipeline.CallSucceeded {
			t.Errorf("call %s is %s", c.CallID, c.Status)
		}
	}
}

func TestPipeline_sequential_mode_publishes_the_second_call_only_after_the_first_finished(t *testing.T) {
	in := newInfra(t)
	stack := connect(t, in, parseConfig(t, testConfig))
	rec := &testinfra.Recording{Publisher: stack.Publisher}
	stack.Publisher = rec
	workers(t, stack)
	base := serve(t, stack)

	script := `{"provider":"script","turns":[
		{"text":"one at a time","tool_calls":[{"name":"sleep","arguments":{"ms":200}},{"name":"echo","arguments":{"n":1}}]},
		{"text":"done"}]}`
	id := createRun(t, base, "r-seq", "sequential", script)
	assertNaturalEnd(t, waitDone(t, base, id, 30*time.Second), 1)
	assertHistory(t, getMessages(t, base, id), []pipeline.Message{
		{Role: "user", Content: "go"},
		{Role: "assistant", Content: "one at a time", ToolCalls: []pipeline.ToolCallRequest{
			{ID: "call_0_0", Name: "sleep", Arguments: json.RawMessage(`{"ms":200}`)},
			{ID: "call_0_1", Name: "echo", Arguments: json.RawMessage(`{"n":1}`)}}},
		{Role: "tool", ToolCallID: "call_0_0", Content: `{"slept_ms":200}`},
		{Role: "tool", ToolCallID: "call_0_1", Content: `{"n":1}`},
		{Role: "assistant", Content: "done"},
	})

	firstFinished, secondRequested := -1, -1
	for i, p := range rec.Log() {
		switch {
		case p.Topic == stack.Names.ToolResults() && strings.Contains(string(p.Payload), `"call_id":"call_0_0"`) && firstFinished < 0:
			firstFinished = i
		case p.Topic == stack.Names.ToolCalls("default") && strings.Contains(string(p.Payload), `"call_id":"call_0_1"`) && secondRequested < 0:
			secondRequested = i
		}
	}
	if firstFinished < 0 || secondRequested < 0 || secondRequested < firstFinished {
		t.Fatalf("first call finished at publish #%d, second call requested at #%d: want the request after the finish", firstFinished, secondRequested)
	}
}

// runBatch runs n copies of threeSteps on a stack whose publisher wrap
// replaces, and checks each ends with the exact history and call records.
func runBatch(t *testing.T, wrap func(*testing.T, topics.Names, message.Publisher) message.Publisher, n int) {
	in := newInfra(t)
	stack := connect(t, in, parseConfig(t, testConfig))
	if wrap != nil {
		stack.Publisher = wrap(t, stack.Names, stack.Publisher)
	}
	workers(t, stack)
	base := serve(t, stack)

	runThreeSteps(t, base, "r-batch", n)
}

// runThreeSteps creates n runs of threeSteps named prefix-i, and checks
// each ends with the exact history and the same four call records. It
// returns their ids.
func runThreeSteps(t *testing.T, base, prefix string, n int) []string {
	t.Helper()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = createRun(t, base, fmt.Sprintf("%s-%d", prefix, i), "assistant", threeSteps)
	}
	var want []callView
	for i, id := range ids {
		v := waitDone(t, base, id, 60*time.Second)
		assertNaturalEnd(t, v, 2)
		assertHistory(t, getMessages(t, base, id), threeStepsHistory())
		if i == 0 {
			want = v.ToolCalls
			continue
		}
		if !reflect.DeepEqual(v.ToolCalls, want) {
			t.Fatalf("run %s tool calls %+v differ from %+v", id, v.ToolCalls, want)
		}
	}
	if len(want) != 4 {
		t.Fatalf("tool calls: %+v", want)
	}
	return ids
}

func TestPipeline_every_message_delivered_twice_changes_nothing(t *testing.T) {
	runBatch(t, func(_ *testing.T, _ topics.Names, p message.Publisher) message.Publisher {
		return testinfra.Duplicating{Publisher: p}
	}, 5)
}

func TestPipeline_step_and_result_messages_reordered_change_nothing(t *testing.T) {
	runBatch(t, func(t *testing.T, names topics.Names, p message.Publisher) message.Publisher {
		r := &testinfra.Reordering{Publisher: p, Window: 40 * time.Millisecond,
			Topics: map[string]bool{names.RunSteps(): true, names.ToolResults(): true, names.ToolCalls("default"): true}}
		t.Cleanup(func() {
			if errs := r.Errors(); len(errs) > 0 {
				t.Errorf("reordered publishes failed: %v", errs)
			}
		})
		return r
	}, 5)
}

// abandoning is testConfig with a tool worker that gives up on its
// executions as soon as it is stopped, as one that dies would.
var abandoning = strings.Replace(testConfig, "toolworker: {lease: 1s,", "toolworker: {shutdown_grace: 1ms, lease: 1s,", 1)

func TestPipeline_a_tool_worker_that_dies_mid_tool_is_replaced_and_the_run_finishes(t *testing.T) {
	in := newInfra(t)
	stack := connect(t, in, parseConfig(t, abandoning))
	start(t, stack.RunStepWorker)
	stopFirst := start(t, func(ctx context.Context) error { return stack.RunToolWorker(ctx, nil) })
	base := serve(t, stack)

	script := `{"provider":"script","turns":[{"text":"slow","tool_calls":[{"name":"sleep","arguments":{"ms":1500}}]},{"text":"done"}]}`
	id := createRun(t, base, "r-dies", "assistant", script)
	testinfra.Eventually(t, 20*time.Second, func() bool {
		v := getRun(t, base, id)
		return len(v.ToolCalls) == 1 && v.ToolCalls[0].Status == pipeline.CallRunning
	}, func() string { return "the call never ran" })
	stopFirst() // its context ends before the commit: nothing is committed
	if c := getRun(t, base, id).ToolCalls[0]; c.Status != pipeline.CallRunning {
		t.Fatalf("a stopped worker committed the call: %+v", c)
	}
	start(t, func(ctx context.Context) error { return stack.RunToolWorker(ctx, nil) })

	v := waitDone(t, base, id, 30*time.Second)
	assertNaturalEnd(t, v, 1)
	if v.ToolCalls[0].Status != pipeline.CallSucceeded {
		t.Fatalf("call: %+v", v.ToolCalls[0])
	}
	events, err := stack.Store.Events(context.Background(), id, "", 1000)
	if err != nil {
		t.Fatal(err)
	}
	if !hasEvent(events, pipeline.EventToolCallRetried) {
		t.Fatalf("no %s event in %v", pipeline.EventToolCallRetried, eventTypes(events))
	}
}

func TestPipeline_a_slow_inference_keeps_its_step_by_renewing_the_lease(t *testing.T) {
	in := newInfra(t)
	stack := connect(t, in, parseConfig(t, testConfig)) // lease 1s, sweeper every 100ms
	workers(t, stack)
	base := serve(t, stack)

	id := createRun(t, base, "r-slow-model", "assistant", `{"provider":"script","turns":[{"text":"thought hard","delay_ms":2500}]}`)
	assertNaturalEnd(t, waitDone(t, base, id, 30*time.Second), 0)
	events, err := stack.Store.Events(context.Background(), id, "", 1000)
	if err != nil {
		t.Fatal(err)
	}
	if hasEvent(events, pipeline.EventStepRetried) {
		t.Fatalf("the sweeper took a step over while it was being inferred: %v", eventTypes(events))
	}
}

func TestPipeline_a_run_whose_tool_retry_budget_is_spent_ends_with_error(t *testing.T) {
	in := newInfra(t)
	cfg := parseConfig(t, strings.Replace(abandoning, "max_attempts: 3", "max_attempts: 1", 1))
	stack := connect(t, in, cfg)
	start(t, stack.RunStepWorker)
	stopTools := start(t, func(ctx context.Context) error { return stack.RunToolWorker(ctx, nil) })
	base := serve(t, stack)

	script := `{"provider":"script","turns":[{"text":"slow","tool_calls":[{"name":"sleep","arguments":{"ms":5000}}]},{"text":"done"}]}`
	id := createRun(t, base, "r-budget", "assistant", script)
	testinfra.Eventually(t, 20*time.Second, func() bool {
		v := getRun(t, base, id)
		return len(v.ToolCalls) == 1 && v.ToolCalls[0].Status == pipeline.CallRunning
	}, func() string { return "the call never ran" })
	stopTools()

	v := waitDone(t, base, id, 30*time.Second)
	if v.Termination.Reason != pipeline.ReasonError || !strings.Contains(v.Termination.Detail, "claimed 1 times") {
		t.Fatalf("termination = %+v, want error about the spent budget", v.Termination)
	}
}

func TestPipeline_malformed_messages_go_to_dead_letter_with_their_reason_and_runs_go_on(t *testing.T) {
	in := newInfra(t)
	stack := connect(t, in, parseConfig(t, testConfig))
	dead := collect(t, stack, stack.Names.DeadLetter())
	workers(t, stack)
	base := serve(t, stack)

	bad := map[string]string{
		stack.Names.RunSteps():           `not json at all`,
		stack.Names.ToolResults():        `{"run_id":"r-x","step":0,"call_id":"c","status":"exploded"}`,
		stack.Names.ToolCalls("default"): `{"run_id":"r-x","step":0}`,
		stack.Names.Decisions():          `{"run_id":"r-x","call_id":"c","action":"approve"}`,
	}
	for topic, payload := range bad {
		publishRaw(t, stack, topic, payload)
	}
	id := createRun(t, base, "r-after-garbage", "assistant", threeSteps)
	assertNaturalEnd(t, waitDone(t, base, id, 30*time.Second), 2)

	var got []deadLetter
	testinfra.Eventually(t, 20*time.Second, func() bool { got = dead(); return len(got) >= len(bad) }, func() string {
		return fmt.Sprintf("dead letters: %+v", got)
	})
	for _, d := range got {
		want, ok := bad[d.sourceTopic]
		if !ok || d.payload != want || !strings.Contains(d.reason, "malformed message") {
			t.Errorf("dead letter %+v does not match what was sent", d)
		}
	}
}

func hasEvent(events []pipeline.Event, typ pipeline.EventType) bool {
	for _, e := range events {
		if e.Type == typ {
			return true
		}
	}
	return false
}

func eventTypes(events []pipeline.Event) []pipeline.EventType {
	out := make([]pipeline.EventType, len(events))
	for i, e := range events {
		out[i] = e.Type
	}
	return out
}
