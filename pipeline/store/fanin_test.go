package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/store"
)

// finishFanIn claims and finishes a call with outcome o, and returns
// whether FinishCall says the step's fan-in is due.
func (f *fixture) finishFanIn(t *testing.T, runID, callID, owner string, o store.CallOutcome) bool {
	t.Helper()
	return f.finish(t, runID, callID, owner, o).FanIn
}

// finish claims and finishes a call with outcome o.
func (f *fixture) finish(t *testing.T, runID, callID, owner string, o store.CallOutcome) store.Finished {
	t.Helper()
	if _, err := f.st.ClaimCall(f.ctx, runID, callID, lease(owner, at(60)), at(3)); err != nil {
		t.Fatalf("ClaimCall(%s): %v", callID, err)
	}
	fin, err := f.st.FinishCall(f.ctx, runID, callID, owner, o, at(4))
	if err != nil {
		t.Fatalf("FinishCall(%s): %v", callID, err)
	}
	return fin
}

// committedSequential creates run id, claims step 0 and commits calls
// with callIDs, to run one at a time.
func (f *fixture) committedSequential(t *testing.T, id string, callIDs ...string) {
	t.Helper()
	f.claimed(t, id)
	c := commitOf(callIDs...)
	c.Sequential = true
	if _, _, err := f.st.CommitStep(f.ctx, id, 0, "w1", c, at(2)); err != nil {
		t.Fatal(err)
	}
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
		fin, err := f.st.FinishCall(f.ctx, "r1", "c1", "t1", succeeded, at(5))
		wantErr(t, err, store.ErrStale)
		if fin.FanIn {
			t.Fatal("a refused finish says fan in")
		}
	}},
	{"every_call_of_a_sequential_step_fans_in", func(t *testing.T, f *fixture) {
		f.committedSequential(t, "r1", "c1", "c2")
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
		fin, err := f.st.FinishCall(f.ctx, "r1", "c1", "t1", succeeded, at(12))
		wantErr(t, err, store.ErrLeaseLost)
		if fin.FanIn {
			t.Fatal("the lost claim's finish says fan in")
		}
		if fin, err = f.st.FinishCall(f.ctx, "r1", "c1", "t2", succeeded, at(12)); err != nil || fin.FanIn {
			t.Fatalf("finish by the new claim = %v, %v; want no fan in (c2 is in flight)", fin.FanIn, err)
		}
		if !f.finishFanIn(t, "r1", "c2", "t1", succeeded) {
			t.Fatal("the last call does not fan in")
		}
	}},
}

// endCases hold that the end of a step decides from the calls it reads
// itself, whoever read them before, and that a fan-in leaves nothing in
// Redis but its run's keys.
var endCases = []contractCase{
	{"the_end_of_a_step_reads_its_calls_and_refuses_one_not_terminal", func(t *testing.T, f *fixture) {
		for _, ids := range [][]string{{"c1"}, {"c1", "c2"}} {
			id := fmt.Sprintf("r%d", len(ids))
			f.committed(t, id, ids...)
			f.done(t, id, "c1")
			last := ids[len(ids)-1]
			if last != "c1" {
				f.noEventsFrom(t, id, func() {
					_, _, err := f.st.EndStep(f.ctx, id, 0, store.StepEnd{CallIDs: ids}, at(5))
					wantErr(t, err, store.ErrStale)
				})
				f.done(t, id, last)
			}
			// A call made "running" behind the store's back: whatever the
			// caller saw, the end reads it and refuses.
			key := f.prefix + ":{" + id + "}:call:" + last
			f.rdb.HSet(f.ctx, key, "status", "running")
			for _, end := range []store.StepEnd{{CallIDs: ids}, {}} {
				f.noEventsFrom(t, id, func() {
					_, _, err := f.st.EndStep(f.ctx, id, 0, end, at(5))
					wantErr(t, err, store.ErrStale)
				})
			}
			f.rdb.HSet(f.ctx, key, "status", "succeeded")
			if run, _, err := f.st.EndStep(f.ctx, id, 0, store.StepEnd{CallIDs: ids}, at(5)); err != nil || run.Step != 1 {
				t.Fatalf("%s: EndStep with every call terminal = %+v, %v; want step 1", id, run, err)
			}
		}
	}},
	{"the_end_refuses_call_ids_that_are_not_the_steps", func(t *testing.T, f *fixture) {
		// The caller's tool messages tell the results of the calls it read:
		// a list read before the commit, or another step's, is not this
		// step's, and the end is refused rather than made without them.
		f.committed(t, "r1", "c1")
		f.done(t, "r1", "c1")
		for _, ids := range [][]string{{}, {"c9"}, {"c1", "c9"}} {
			f.noEventsFrom(t, "r1", func() {
				_, claimed, err := f.st.EndStepAndClaim(f.ctx, "r1", 0, store.StepEnd{CallIDs: ids}, lease("w1", at(40)), at(5))
				wantErr(t, err, store.ErrStale)
				if claimed != nil {
					t.Fatalf("a refused end claimed %+v", claimed)
				}
			})
		}
		if _, claimed, err := f.st.EndStepAndClaim(f.ctx, "r1", 0, store.StepEnd{CallIDs: []string{"c1"}}, lease("w1", at(40)), at(5)); err != nil || claimed == nil {
			t.Fatalf("EndStepAndClaim with the step's call ids = %+v, %v", claimed, err)
		}
	}},
	{"a_finish_and_its_fan_in_write_only_their_runs_keys", func(t *testing.T, f *fixture) {
		f.committed(t, "r1", "c1")
		if _, err := f.st.ClaimCall(f.ctx, "r1", "c1", lease("t1", at(60)), at(3)); err != nil {
			t.Fatal(err)
		}
		before := f.keys(t)
		if fin, err := f.st.FinishCall(f.ctx, "r1", "c1", "t1", succeeded, at(4)); err != nil || !fin.FanIn {
			t.Fatalf("FinishCall = %+v, %v", fin, err)
		}
		snap, err := f.st.Snapshot(f.ctx, "r1", 0, at(4))
		if err != nil || len(snap.Calls) != 1 || !snap.Calls[0].Status.Terminal() {
			t.Fatalf("the fan-in's read = %+v, %v", snap, err)
		}
		end := store.StepEnd{CallIDs: []string{"c1"}}
		if _, claimed, err := f.st.EndStepAndClaim(f.ctx, "r1", 0, end, lease("w1", at(40)), at(5)); err != nil || claimed == nil {
			t.Fatalf("EndStepAndClaim = %+v, %v", claimed, err)
		}
		for _, k := range f.keys(t) {
			if !slices.Contains(before, k) && !strings.Contains(k, "{r1}") {
				t.Errorf("the fan-in wrote %s, a key of no run", k)
			}
		}
	}},
}

// keys are the keys of f's store, on every node of a cluster.
func (f *fixture) keys(t *testing.T) []string {
	t.Helper()
	c, ok := f.rdb.(*redis.ClusterClient)
	if !ok {
		return f.rdb.Keys(f.ctx, f.prefix+":*").Val()
	}
	var mu sync.Mutex
	var all []string
	if err := c.ForEachMaster(f.ctx, func(ctx context.Context, node *redis.Client) error {
		keys, err := node.Keys(ctx, f.prefix+":*").Result()
		mu.Lock()
		defer mu.Unlock()
		all = append(all, keys...)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return all
}
