package store_test

import (
	"encoding/json"
	"testing"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/store"
)

// handoffCommit is step 0's commit of a turn that calls transfer_to_refunds,
// answered at once, and hands the run from assistant to refunds.
func handoffCommit() store.StepCommit {
	c := commitOf()
	args := json.RawMessage(`{}`)
	c.Assistant.ToolCalls = []pipeline.ToolCallRequest{{ID: "h1", Name: "transfer_to_refunds", Arguments: args}}
	c.Calls = []pipeline.ToolCall{{ID: "h1", Tool: "transfer_to_refunds", Arguments: args, Status: pipeline.CallSucceeded,
		Gate: pipeline.GateSetResult, Result: json.RawMessage(`{"assistant":"refunds"}`)}}
	c.Handoff = &store.Handoff{From: "assistant", To: "refunds", CallID: "h1"}
	return c
}

var handoffCases = []contractCase{
	{"a_run_never_handed_off_is_held_by_its_agent", func(t *testing.T, f *fixture) {
		run, _ := f.committed(t, "r1", "c1")
		if run.CurrentAgent != "assistant" || run.Handoffs != 0 || run.HandoffCall != "" {
			t.Fatalf("run = %+v; want it held by its agent, never handed off", run)
		}
	}},
	{"a_commit_with_a_handoff_gives_the_run_to_the_other_agent_once", func(t *testing.T, f *fixture) {
		f.claimed(t, "r1")
		run, calls, err := f.st.CommitStep(f.ctx, "r1", 0, "w1", handoffCommit(), at(2))
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range []pipeline.Run{run, f.run(t, "r1")} {
			if r.Agent != "assistant" || r.CurrentAgent != "refunds" || r.Handoffs != 1 || r.HandoffCall != "h1" {
				t.Fatalf("run = %+v; want agent assistant held by refunds after 1 handoff, by call h1", r)
			}
		}
		if len(calls) != 1 || calls[0].Status != pipeline.CallSucceeded {
			t.Fatalf("calls = %+v", calls)
		}
		evs := f.events(t, "r1")
		wantTypes(t, typesOf(evs), pipeline.EventRunCreated, pipeline.EventRunStarted, pipeline.EventStepStarted,
			pipeline.EventAssistantMessage, pipeline.EventToolCallCreated, pipeline.EventToolCallFinished, pipeline.EventRunHandoff)
		last := evs[len(evs)-1]
		wantJSON(t, last.Data, `{"from":"assistant","to":"refunds"}`)
		if last.CallID != "h1" || last.Step != 0 {
			t.Fatalf("run.handoff = %+v; want call h1 at step 0", last)
		}
		// Redelivered: the commit is refused, and the run is not handed
		// off again.
		f.noEventsFrom(t, "r1", func() {
			_, _, err := f.st.CommitStep(f.ctx, "r1", 0, "w1", handoffCommit(), at(3))
			wantErr(t, err, store.ErrStale)
		})
		if r := f.run(t, "r1"); r.Handoffs != 1 {
			t.Fatalf("handoffs = %d after a redelivered commit; want 1", r.Handoffs)
		}
	}},
	{"a_handoff_to_the_agent_that_holds_the_run_is_invalid", func(t *testing.T, f *fixture) {
		f.claimed(t, "r1")
		c := handoffCommit()
		c.Handoff.To = "assistant"
		f.noEventsFrom(t, "r1", func() {
			_, _, err := f.st.CommitStep(f.ctx, "r1", 0, "w1", c, at(2))
			wantErr(t, err, store.ErrInvalid)
		})
	}},
}
