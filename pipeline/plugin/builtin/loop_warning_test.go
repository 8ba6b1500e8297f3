package builtin_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/model"
	"github.com/stepwise-run/stepwise/pipeline/plugin"
	"github.com/stepwise-run/stepwise/pipeline/plugin/builtin"
)

// loopStep runs BeforeInference and AfterInference of one step with the
// model proposing calls; it returns the context messages of the step's
// request and the state to checkpoint.
func loopStep(t *testing.T, set *plugin.Set, state plugin.State, step int, calls ...pipeline.ToolCallRequest) ([]pipeline.Message, plugin.State) {
	t.Helper()
	before := &plugin.Context{
		Phase: pipeline.PhaseBeforeInference, Run: pipeline.Run{ID: "r-1", Step: step},
		State: state, Request: &plugin.Request{},
	}
	run(t, set, before)
	after := &plugin.Context{
		Phase: pipeline.PhaseAfterInference, Run: pipeline.Run{ID: "r-1", Step: step},
		State: before.State, Response: &model.Response{ToolCalls: calls},
	}
	run(t, set, after)
	return before.Request.Messages, checkpoint(set, after.State)
}

func call(id, tool, args string) pipeline.ToolCallRequest {
	return pipeline.ToolCallRequest{ID: id, Name: tool, Arguments: json.RawMessage(args)}
}

func TestLoopWarning_warns_after_window_steps_of_the_same_calls(t *testing.T) {
	set := build(t, builtin.LoopWarning, `{"window": 3}`)
	state := plugin.State{}
	// The same calls each step: other ids, other order, other key order.
	steps := [][]pipeline.ToolCallRequest{
		{call("a", "lookup", `{"id": 7, "deep": true}`), call("b", "fetch", `{"url": "u"}`)},
		{call("c", "fetch", `{"url":"u"}`), call("d", "lookup", `{"deep":true,"id":7}`)},
		{call("e", "lookup", `{ "deep": true, "id": 7 }`), call("f", "fetch", `{"url": "u"}`)},
	}
	for i, calls := range steps {
		var msgs []pipeline.Message
		msgs, state = loopStep(t, set, state, i, calls...)
		if len(msgs) != 0 {
			t.Fatalf("step %d: warned too early: %+v", i, msgs)
		}
	}
	if n, ok := get(t, state, builtin.LoopWarnKey); !ok || n != 3 {
		t.Fatalf("warn flag %d, %v after 3 identical steps; want 3", n, ok)
	}

	msgs, state := loopStep(t, set, state, 3, call("g", "other", `{}`))
	if len(msgs) != 1 || msgs[0].Role != pipeline.RoleSystem || !strings.Contains(msgs[0].Content, "last 3 steps") {
		t.Fatalf("context messages %+v, want the loop warning", msgs)
	}
	if _, ok := get(t, state, builtin.LoopWarnKey); ok {
		t.Fatal("the warning did not clear the flag")
	}
	if msgs, _ := loopStep(t, set, state, 4); len(msgs) != 0 {
		t.Fatalf("warned again after other calls: %+v", msgs)
	}
}

func TestLoopWarning_different_arguments_break_the_streak(t *testing.T) {
	set := build(t, builtin.LoopWarning, `{"window": 2}`)
	state := plugin.State{}
	_, state = loopStep(t, set, state, 0, call("a", "lookup", `{"id": 1}`))
	_, state = loopStep(t, set, state, 1, call("b", "lookup", `{"id": 2}`))
	if _, ok := get(t, state, builtin.LoopWarnKey); ok {
		t.Fatal("warned for calls with other arguments")
	}
	_, state = loopStep(t, set, state, 2, call("c", "lookup", `{"id": 2}`))
	if _, ok := get(t, state, builtin.LoopWarnKey); !ok {
		t.Fatal("no warning after 2 identical steps with window 2")
	}
	if recent, _ := get(t, state, builtin.LoopRecentKey); len(recent) != 2 {
		t.Fatalf("recent %v, want the last 2 signatures", recent)
	}
}

func TestLoopWarning_keys_are_persistent(t *testing.T) {
	set := build(t, builtin.LoopWarning, "")
	for _, k := range []string{builtin.LoopRecentKey.Name, builtin.LoopWarnKey.Name} {
		if !set.Persistent(k) {
			t.Errorf("%s is not persistent", k)
		}
	}
}

func TestLoopWarning_settings_refuse_a_window_below_two(t *testing.T) {
	_, err := builtin.NewLoopWarning(json.RawMessage(`{"window": 1}`))
	if !errors.Is(err, builtin.ErrInvalidSettings) || !strings.Contains(err.Error(), "window: 1") {
		t.Fatalf("error %v, want ErrInvalidSettings naming window", err)
	}
}
