package store_test

import (
	"reflect"
	"testing"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/store"
)

// The scripts that return a run or a call return it as their writes leave
// it: read again at their end (claim_step, commit_step), or read whole
// before they write and patched with their writes (lib.lua's read_fields and
// set_fields). These cases hold each such reply to what Redis stores, through
// every branch that writes the hash differently.

// sameRun checks that a run a script returned is the one Redis holds.
func (f *fixture) sameRun(t *testing.T, what string, got pipeline.Run) {
	t.Helper()
	if stored := f.run(t, got.ID); !reflect.DeepEqual(got, stored) {
		t.Fatalf("%s returned\n%+v\nRedis holds\n%+v", what, got, stored)
	}
}

// sameCall checks that a call a script returned is the one Redis holds.
func (f *fixture) sameCall(t *testing.T, what, runID string, got pipeline.ToolCall) {
	t.Helper()
	if stored := f.call(t, runID, got.ID); !reflect.DeepEqual(got, stored) {
		t.Fatalf("%s returned\n%+v\nRedis holds\n%+v", what, got, stored)
	}
}

var replyCases = []contractCase{
	{"what_a_script_returns_of_a_run_is_what_it_stored", func(t *testing.T, f *fixture) {
		f.created(t, "r1")
		run, err := f.st.ClaimStep(f.ctx, "r1", 0, lease("w1", at(30)), at(1)) // created → running
		if err != nil {
			t.Fatal(err)
		}
		f.sameRun(t, "ClaimStep", run)
		// A second attempt, once the lease is over.
		run, err = f.st.ClaimStep(f.ctx, "r1", 0, lease("w2", at(90)), at(31))
		if err != nil || run.Attempts != 2 {
			t.Fatalf("ClaimStep again = %+v, %v", run, err)
		}
		f.sameRun(t, "ClaimStep (attempt 2)", run)
		// A streamed turn: the commit deletes delta_from, and sums the usage
		// and cost.
		if err := f.st.AppendDelta(f.ctx, "r1", 0, "w2", "Hel", at(32)); err != nil {
			t.Fatal(err)
		}
		c := commitOf("c1")
		c.Usage.CostUSD = 0.0015
		run, _, err = f.st.CommitStep(f.ctx, "r1", 0, "w2", c, at(33))
		if err != nil {
			t.Fatal(err)
		}
		f.sameRun(t, "CommitStep", run)
		f.done(t, "r1", "c1")
		run, claimed, err := f.st.EndStepAndClaim(f.ctx, "r1", 0, store.StepEnd{}, lease("w3", at(90)), at(34))
		if err != nil || claimed == nil {
			t.Fatalf("EndStepAndClaim = %+v, %v", claimed, err)
		}
		f.sameRun(t, "EndStepAndClaim", run)
		// A sequential step: the commit deletes the open count.
		c = commitOf("c2")
		c.Sequential = true
		if run, _, err = f.st.CommitStep(f.ctx, "r1", 1, "w3", c, at(35)); err != nil {
			t.Fatal(err)
		}
		f.sameRun(t, "CommitStep (sequential)", run)
		f.done(t, "r1", "c2")
		if run, _, err = f.st.EndStep(f.ctx, "r1", 1, store.StepEnd{}, at(36)); err != nil {
			t.Fatal(err)
		}
		f.sameRun(t, "EndStep", run)
		if _, err = f.st.ClaimStep(f.ctx, "r1", 2, lease("w4", at(90)), at(37)); err != nil {
			t.Fatal(err)
		}
		f.commit(t, "r1", 2, "w4")
		end := store.StepEnd{Finish: &pipeline.Termination{Reason: pipeline.ReasonNaturalEnd}}
		if run, _, err = f.st.EndStep(f.ctx, "r1", 2, end, at(38)); err != nil || run.Status != pipeline.RunDone {
			t.Fatalf("EndStep ending the run = %+v, %v", run, err)
		}
		f.sameRun(t, "EndStep (the run's end)", run)
	}},
	{"what_a_script_returns_of_a_call_is_what_it_stored", func(t *testing.T, f *fixture) {
		f.committed(t, "r1", "c1", "c2")
		call, err := f.st.ClaimCall(f.ctx, "r1", "c1", lease("t1", at(20)), at(3))
		if err != nil {
			t.Fatal(err)
		}
		f.sameCall(t, "ClaimCall", "r1", call)
		if call, err = f.st.ClaimCall(f.ctx, "r1", "c1", lease("t2", at(60)), at(21)); err != nil || call.Attempts != 2 {
			t.Fatalf("ClaimCall again = %+v, %v", call, err)
		}
		f.sameCall(t, "ClaimCall (attempt 2)", "r1", call)
		fin, err := f.st.FinishCall(f.ctx, "r1", "c1", "t2",
			store.CallOutcome{Status: pipeline.CallSuspended, Parking: parking(pipeline.ResumeReplay)}, at(22))
		if err != nil {
			t.Fatal(err)
		}
		f.sameCall(t, "FinishCall (parked)", "r1", fin.Call)
	}},
}
