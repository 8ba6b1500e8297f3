package stop_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/stop"
)

func TestHistory_groups_run_calls_by_step_in_call_order(t *testing.T) {
	rec := func(step, index int, tool string) pipeline.ToolCall {
		return pipeline.ToolCall{Step: step, Index: index, Tool: tool, Arguments: json.RawMessage(`{}`), Status: pipeline.CallSucceeded}
	}
	c := func(tool string) stop.Call {
		return stop.Call{Tool: tool, Arguments: json.RawMessage(`{}`), Status: pipeline.CallSucceeded}
	}
	runCalls := []pipeline.ToolCall{rec(3, 1, "d"), rec(0, 0, "a"), rec(3, 0, "c"), rec(1, 0, "b"), rec(4, 0, "future")}
	tests := []struct {
		name    string
		step, n int
		want    []stop.StepRecord
	}{
		{"none needed", 3, 0, nil},
		{"this step only", 3, 1, []stop.StepRecord{{Step: 3, Calls: []stop.Call{c("c"), c("d")}}}},
		{
			"a step without records is empty", 3, 2,
			[]stop.StepRecord{{Step: 2}, {Step: 3, Calls: []stop.Call{c("c"), c("d")}}},
		},
		{
			"clamped at step 0", 1, 5,
			[]stop.StepRecord{{Step: 0, Calls: []stop.Call{c("a")}}, {Step: 1, Calls: []stop.Call{c("b")}}},
		},
		{"negative step", -1, 3, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := stop.History(runCalls, tt.step, tt.n)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("History(step %d, n %d) =\n%+v\nwant\n%+v", tt.step, tt.n, got, tt.want)
			}
		})
	}
	if runCalls[0].Tool != "d" {
		t.Error("History reordered the caller's slice")
	}
}

func TestCallOf_uses_the_arguments_the_model_gave(t *testing.T) {
	tests := []struct {
		name string
		tc   pipeline.ToolCall
		want stop.Call
	}{
		{
			"plain call",
			pipeline.ToolCall{Tool: "f", Arguments: json.RawMessage(`{"a":1}`), Status: pipeline.CallFailed},
			stop.Call{Tool: "f", Arguments: json.RawMessage(`{"a":1}`), Status: pipeline.CallFailed},
		},
		{
			"pass_decision_to_tool replaced the arguments",
			pipeline.ToolCall{Tool: "f", Arguments: json.RawMessage(`{"approved":true}`), OrigArgs: json.RawMessage(`{"a":1}`), Status: pipeline.CallSucceeded},
			stop.Call{Tool: "f", Arguments: json.RawMessage(`{"a":1}`), Status: pipeline.CallSucceeded},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := stop.CallOf(tt.tc); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("CallOf = %+v, want %+v", got, tt.want)
			}
		})
	}
}
