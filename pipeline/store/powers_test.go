package store_test

import (
	"encoding/json"
	"testing"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/store"
)

// powersCases are the writes of the seeds' plugin powers (ADR 0066).
var powersCases = []contractCase{
	{"finish_call_commits_the_calls_plugin_state_and_failed_actions_with_its_outcome", func(t *testing.T, f *fixture) {
		f.committed(t, "r1", "c1")
		if _, err := f.st.ClaimCall(f.ctx, "r1", "c1", lease("t1", at(60)), at(3)); err != nil {
			t.Fatal(err)
		}
		failed := pipeline.FailedAction{Phase: pipeline.PhaseBeforeInference, Key: "runtime.add_context_message", Error: "aimed elsewhere"}
		_, err := f.st.FinishCall(f.ctx, "r1", "c1", "t1", store.CallOutcome{Status: pipeline.CallSucceeded, Result: json.RawMessage(`{}`),
			State: []pipeline.StateUpdate{{Key: "memory.facts", Value: json.RawMessage(`["a"]`)}}, Failed: []pipeline.FailedAction{failed}}, at(4))
		if err != nil {
			t.Fatal(err)
		}
		if st, _ := f.st.RunState(f.ctx, "r1"); string(st["memory.facts"]) != `["a"]` {
			t.Fatalf("state = %v", st)
		}
		evs := f.events(t, "r1")
		last := evs[len(evs)-1]
		if last.Type != pipeline.EventActionFailed || last.CallID != "c1" || last.Step != 0 {
			t.Fatalf("last event = %+v", last)
		}
		wantJSON(t, last.Data, `{"phase":"before_inference","key":"runtime.add_context_message","error":"aimed elsewhere"}`)
	}},
	{"gate_call_answers_a_new_call_and_a_block_cancels_the_calls_after_it", func(t *testing.T, f *fixture) {
		f.committed(t, "r1", "c1", "c2", "c3")
		_, err := f.st.GateCall(f.ctx, "r1", "c2", store.CallOutcome{Status: pipeline.CallFailed, Error: "no"},
			pipeline.GateBlock, []string{"c3"}, "not run: blocked at c2", at(4))
		if err != nil {
			t.Fatal(err)
		}
		c2, _ := f.st.GetCall(f.ctx, "r1", "c2")
		c3, _ := f.st.GetCall(f.ctx, "r1", "c3")
		if c2.Status != pipeline.CallFailed || c2.Gate != pipeline.GateBlock || c3.Status != pipeline.CallCancelled || c3.Error != "not run: blocked at c2" {
			t.Fatalf("c2 = %+v, c3 = %+v", c2, c3)
		}
		_, err = f.st.GateCall(f.ctx, "r1", "c2", store.CallOutcome{Status: pipeline.CallSucceeded}, pipeline.GateSetResult, nil, "", at(5))
		wantErr(t, err, store.ErrStale)
	}},
	{"run_end_commits_once", func(t *testing.T, f *fixture) {
		f.claimed(t, "r1")
		mark := pipeline.StateUpdate{Key: "runtime.run_end", Value: json.RawMessage(`5000`)}
		kept := []pipeline.StateUpdate{{Key: "memory.kept", Value: json.RawMessage(`1`)}}
		wantErr(t, f.st.CommitRunEnd(f.ctx, "r1", mark, kept, nil, at(5)), store.ErrStale) // not done yet
		f.finishRun(t, "r1")
		if err := f.st.CommitRunEnd(f.ctx, "r1", mark, kept, nil, at(5)); err != nil {
			t.Fatal(err)
		}
		again := []pipeline.StateUpdate{{Key: "memory.kept", Value: json.RawMessage(`2`)}}
		wantErr(t, f.st.CommitRunEnd(f.ctx, "r1", mark, again, nil, at(6)), store.ErrStale)
		if st, _ := f.st.RunState(f.ctx, "r1"); string(st["memory.kept"]) != "1" || string(st["runtime.run_end"]) != "5000" {
			t.Fatalf("state = %v", st)
		}
	}},
}
