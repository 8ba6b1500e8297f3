package store_test

import (
	"encoding/json"
	"testing"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/store"
)

// finishFanIn claims and finishes a call with outcome o, and returns
// whether FinishCall says the step's fan-in is due.
func (f *fixture) finishFanIn(t *testing.T, runID, callID, owner string, o store.CallOutcome) bool {
	t.Helper()
	if _, err := f.st.ClaimCall(f.ctx, runID, callID, lease(owner, at(60)), at(3)); err != nil {
		t.Fatalf("ClaimCall(%s): %v", callID, err)
	}
	_, fanIn, err := f.st.FinishCall(f.ctx, runID, callID, owner, o, at(4))
	if err != nil {
		t.Fatalf("FinishCall(%s): %v", callID, err)
	}
	return fanIn
}

var succeeded = store.CallOutcome{Status: pipeline.CallSucceeded, Result: json.RawMessage(`{"ok":true}`)}

var fanInCases = []contractCase{
	{"only_the_last_call_of_a_parallel_step_fans_in", func(t *testing.T, f *fixture) {
		f.committed(t, "r1", "c1", "c2", "c3")
		for i, id := range []string{"c2", "c1", "c3"} {
			if got, want := f.finishFanIn(t, "r1", id, "t1", succeeded), i == 2; got != want {
				t.Fatalf("finish %s (%d of 3): fan in %v, want %v", id, i+1, got, want)
			}
		}
		// A refused finish counts nothing: a redelivered outcome.
		_, fanIn, err := f.st.FinishCall(f.ctx, "r1", "c1", "t1", succeeded, at(5))
		wantErr(t, err, store.ErrStale)
		if fanIn {
			t.Fatal("a refused finish says fan in")
		}
	}},
	{"every_call_of_a_sequential_step_fans_in", func(t *testing.T, f *fixture) {
		f.claimed(t, "r1")
		c := commitOf("c1", "c2")
		c.Sequential = true
		if _, _, err := f.st.CommitStep(f.ctx, "r1", 0, "w1", c, at(2)); err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{"c1", "c2"} {
			if !f.finishFanIn(t, "r1", id, "t1", succeeded) {
				t.Fatalf("finish %s of a sequential step: no fan in", id)
			}
		}
	}},
	{"a_call_that_parks_fans_in_and_a_resumed_one_is_in_flight_again", func(t *testing.T, f *fixture) {
		f.committed(t, "r1", "c1", "c2", "c3")
		// The tool returns pending: a held decision may wait for it.
		pending := store.CallOutcome{Status: pipeline.CallSuspended, Parking: parking(pipeline.ResumeReplay)}
		if !f.finishFanIn(t, "r1", "c1", "t1", pending) {
			t.Fatal("a parked call does not fan in")
		}
		if f.finishFanIn(t, "r1", "c2", "t1", succeeded) {
			t.Fatal("c3 is still in flight, yet c2 fans in")
		}
		// Resumed, c1 is in flight beside c3: the later of the two fans in.
		if res := f.decide(t, "r1", resume("d1", "c1"), at(5)); res.Outcome != store.DecisionApplied {
			t.Fatalf("decision = %+v", res)
		}
		if f.finishFanIn(t, "r1", "c3", "t1", succeeded) {
			t.Fatal("c1 runs again, yet c3 fans in")
		}
		if !f.finishFanIn(t, "r1", "c1", "t2", succeeded) {
			t.Fatal("the last call in flight does not fan in")
		}
	}},
	{"a_call_taken_over_after_its_lease_ran_out_counts_once", func(t *testing.T, f *fixture) {
		f.committed(t, "r1", "c1", "c2")
		if _, err := f.st.ClaimCall(f.ctx, "r1", "c1", lease("t1", at(10)), at(3)); err != nil {
			t.Fatal(err)
		}
		if _, err := f.st.ClaimCall(f.ctx, "r1", "c1", lease("t2", at(60)), at(11)); err != nil {
			t.Fatalf("take over: %v", err)
		}
		_, fanIn, err := f.st.FinishCall(f.ctx, "r1", "c1", "t1", succeeded, at(12))
		wantErr(t, err, store.ErrLeaseLost)
		if fanIn {
			t.Fatal("the lost claim's finish says fan in")
		}
		if _, fanIn, err = f.st.FinishCall(f.ctx, "r1", "c1", "t2", succeeded, at(12)); err != nil || fanIn {
			t.Fatalf("finish by the new claim = %v, %v; want no fan in (c2 is in flight)", fanIn, err)
		}
		if !f.finishFanIn(t, "r1", "c2", "t1", succeeded) {
			t.Fatal("the last call does not fan in")
		}
	}},
}
