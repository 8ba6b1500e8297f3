package stepworker

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/versions"
)

// The ids a step gives its calls: the model's when free in the run, else
// derived from the step and position, never one the conversation already
// names (CommitStep would refuse it, and the step would never commit).
func TestNameCalls_gives_ids_unique_in_the_run_and_stable_across_attempts(t *testing.T) {
	prior := []pipeline.Message{
		{Role: pipeline.RoleUser, Content: "go"},
		{Role: pipeline.RoleAssistant, ToolCalls: []pipeline.ToolCallRequest{{ID: "c"}, {ID: "call_1_1"}}},
		{Role: pipeline.RoleTool, ToolCallID: "c"},
		{Role: pipeline.RoleAssistant, ToolCalls: []pipeline.ToolCallRequest{{ID: "c_s1"}}},
	}
	reqs := []pipeline.ToolCallRequest{{ID: "c"}, {ID: "d"}, {ID: "d"}, {}, {ID: "e"}}
	want := "c_s1_s1 d call_1_2 call_1_3 e"
	for attempt := range 2 {
		calls := nameCalls(&versions.Version{}, pipeline.Run{ID: "r", Step: 1}, prior, reqs)
		var ids []string
		for i, c := range calls {
			if c.Index != i || c.Step != 1 || c.RunID != "r" || c.Queue != "default" {
				t.Fatalf("call %d: %+v", i, c)
			}
			ids = append(ids, c.ID)
		}
		if got := strings.Join(ids, " "); got != want {
			t.Fatalf("attempt %d: ids %q, want %q", attempt, got, want)
		}
	}
	// The model proposing "call_1_1", an id the run has, in a step whose
	// derived name for position 1 is that id too.
	calls := nameCalls(&versions.Version{}, pipeline.Run{ID: "r", Step: 1}, prior, []pipeline.ToolCallRequest{{ID: "x"}, {ID: "call_1_1"}})
	if calls[1].ID != "call_1_1_s1" {
		t.Fatalf("a taken id became %q", calls[1].ID)
	}
}

// Naming a step's calls costs the same in a long run as in a short one: it
// looks up the ids its calls may get, rather than gathering every id the
// run has (which made a run's steps cost the square of its calls).
func TestNameCalls_costs_no_more_in_a_long_run(t *testing.T) {
	conversation := func(steps int) []pipeline.Message {
		msgs := []pipeline.Message{{Role: pipeline.RoleUser, Content: "go"}}
		for s := range steps {
			id := "call_" + strconv.Itoa(s) + "_0"
			msgs = append(msgs, pipeline.Message{Role: pipeline.RoleAssistant, ToolCalls: []pipeline.ToolCallRequest{{ID: id}}},
				pipeline.Message{Role: pipeline.RoleTool, ToolCallID: id})
		}
		return msgs
	}
	reqs := []pipeline.ToolCallRequest{{Name: "echo"}, {ID: "toolu_1", Name: "echo"}}
	allocs := func(steps int) float64 {
		msgs := conversation(steps)
		return testing.AllocsPerRun(20, func() { nameCalls(&versions.Version{}, pipeline.Run{ID: "r", Step: 1000}, msgs, reqs) })
	}
	if short, long := allocs(10), allocs(1000); long > short {
		t.Errorf("naming 2 calls after 1,000 steps: %.0f allocations, after 10: %.0f", long, short)
	}
}
