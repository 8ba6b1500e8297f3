package store_test

import (
	"encoding/json"
	"testing"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/store"
)

var stateCases = []contractCase{
	{"plugin_state_is_committed_with_the_step_and_only_once", func(t *testing.T, f *fixture) {
		f.claimed(t, "r1")
		c := commitOf()
		c.State = []pipeline.StateUpdate{{Key: "audit.calls", Value: json.RawMessage(`1`)}, {Key: "tmp", Value: json.RawMessage(`"x"`)}}
		if _, _, err := f.st.CommitStep(f.ctx, "r1", 0, "w1", c, at(2)); err != nil {
			t.Fatal(err)
		}
		c.State = []pipeline.StateUpdate{{Key: "audit.calls", Value: json.RawMessage(`2`)}}
		_, _, err := f.st.CommitStep(f.ctx, "r1", 0, "w1", c, at(3)) // the same step again: refused
		wantErr(t, err, store.ErrStale)
		st, err := f.st.RunState(f.ctx, "r1")
		if err != nil || string(st["audit.calls"]) != `1` || string(st["tmp"]) != `"x"` {
			t.Fatalf("state after commit = %v, %v", st, err)
		}
		if _, _, err := f.st.EndStep(f.ctx, "r1", 0, store.StepEnd{
			Finish: &pipeline.Termination{Reason: pipeline.ReasonNaturalEnd},
			State:  []pipeline.StateUpdate{{Key: "tmp"}, {Key: "audit.ended", Value: json.RawMessage(`true`)}},
		}, at(4)); err != nil {
			t.Fatal(err)
		}
		st, _ = f.st.RunState(f.ctx, "r1")
		if len(st) != 2 || string(st["audit.ended"]) != `true` || st["tmp"] != nil {
			t.Fatalf("state after end = %v", st)
		}
	}},
}
