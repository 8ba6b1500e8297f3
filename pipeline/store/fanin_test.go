package store_test

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

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

// viewCases hold when the last finish of a step reads the fan-in's view
// (store.Finished.View), and that the view is the step as the store has it.
// slim is run as a fan-in's view holds it: without its model and
// metadata (DecodeView).
func slim(run pipeline.Run) pipeline.Run {
	run.Model, run.Metadata = nil, nil
	return run
}

var viewCases = []contractCase{
	{"a_view_leaves_out_the_runs_model_and_metadata", func(t *testing.T, f *fixture) {
		run := newRun("big")
		run.Model = json.RawMessage(`{"provider":"script","turns":[{"text":"` + strings.Repeat("m", 600) + `"}]}`)
		run.Metadata = json.RawMessage(`{"ticket":"` + strings.Repeat("d", 600) + `"}`)
		if _, ok, err := f.st.CreateRun(f.ctx, run, input, t0); err != nil || !ok {
			t.Fatalf("CreateRun = %v, %v", ok, err)
		}
		if _, err := f.st.ClaimStep(f.ctx, "big", 0, lease("w1", at(30)), at(1)); err != nil {
			t.Fatal(err)
		}
		f.commit(t, "big", 0, "w1", "c1")
		fin := f.finish(t, "big", "c1", "t1", succeeded)
		if fin.View == nil {
			t.Fatal("the only call's finish brought no view (held the run's model and metadata, it would be over MaxViewBytes)")
		}
		if bytes.Contains(fin.View, []byte("mmmm")) || bytes.Contains(fin.View, []byte("dddd")) {
			t.Errorf("the view holds the run's model or metadata: %.200s", fin.View)
		}
		snap, err := f.st.DecodeView(f.ctx, "big", fin.View, fin.ViewMAC)
		if err != nil {
			t.Fatal(err)
		}
		if stored := f.run(t, "big"); !reflect.DeepEqual(slim(stored), snap.Run) || len(stored.Model) == 0 || len(stored.Metadata) == 0 {
			t.Errorf("view's run %+v, Redis holds %+v", snap.Run, stored)
		}
	}},
	{"the_last_call_of_a_step_brings_the_step_for_its_fan_in", func(t *testing.T, f *fixture) {
		f.committed(t, "r1", "c1", "c2")
		if fin := f.finish(t, "r1", "c2", "t1", succeeded); fin.View != nil {
			t.Fatalf("c1 is in flight, yet the finish of c2 brings a view: %s", fin.View)
		}
		fin := f.finish(t, "r1", "c1", "t1", store.CallOutcome{Status: pipeline.CallFailed, Error: "boom"})
		if !fin.FanIn || fin.View == nil {
			t.Fatalf("the last finish = fan in %v, view %s; want both", fin.FanIn, fin.View)
		}
		snap, err := f.st.DecodeView(f.ctx, "r1", fin.View, fin.ViewMAC)
		if err != nil {
			t.Fatal(err)
		}
		want, err := f.st.Snapshot(f.ctx, "r1", 0, at(4))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(slim(want.Run), snap.Run) || !reflect.DeepEqual(want.Calls, snap.Calls) {
			t.Fatalf("the view is not a snapshot read after the finish, less the run's model and metadata:\nview     %+v\nsnapshot %+v", snap, want)
		}
		if len(snap.Held) != 0 || !snap.HeldKnown || len(snap.Outcomes) != 0 || !snap.Scheduled.IsZero() {
			t.Fatalf("view = %+v, want nothing held, nothing waiting, no sweep time", snap)
		}
	}},
	{"the_only_call_of_a_step_brings_the_step_as_a_call_of_an_earlier_store_does", func(t *testing.T, f *fixture) {
		// The commit marks the only call of a step "alone", and its finish
		// reads the run whole at once rather than twice (finish_call.lua);
		// a call written before the mark existed goes the longer way. Both
		// views are the step as a snapshot reads it.
		for _, id := range []string{"marked", "unmarked"} {
			f.committed(t, id, "c1")
			key := f.prefix + ":{" + id + "}:call:c1"
			if n := f.rdb.HExists(f.ctx, key, "alone").Val(); !n {
				t.Fatalf("%s: the commit did not mark the step's only call", id)
			}
			if id == "unmarked" {
				f.rdb.HDel(f.ctx, key, "alone")
			}
			fin := f.finish(t, id, "c1", "t1", succeeded)
			if !fin.FanIn || fin.View == nil {
				t.Fatalf("%s: fan in %v, view %s; want both", id, fin.FanIn, fin.View)
			}
			snap, err := f.st.DecodeView(f.ctx, id, fin.View, fin.ViewMAC)
			if err != nil {
				t.Fatal(err)
			}
			want, err := f.st.Snapshot(f.ctx, id, 0, at(4))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(slim(want.Run), snap.Run) || !reflect.DeepEqual(want.Calls, snap.Calls) {
				t.Fatalf("%s: the view is not a snapshot read after the finish, less the run's model and metadata:\nview     %+v\nsnapshot %+v", id, snap, want)
			}
		}
	}},
	{"the_end_of_a_step_with_one_call_reads_that_call_alone_and_still_checks_it", func(t *testing.T, f *fixture) {
		// end_step takes the only call of its step, as commit_step marked
		// it, for the whole step list (end_step.lua); a call written before
		// the mark goes by the list. Either way a call in flight keeps the
		// step from ending, and the end of a caller that read the list
		// before the commit, or gives another step's call, reads it again.
		for _, id := range []string{"marked", "unmarked"} {
			f.claimed(t, id)
			early := store.StepEnd{CallIDs: []string{}} // read before the commit
			f.commit(t, id, 0, "w1", "c1")
			if id == "unmarked" {
				f.rdb.HDel(f.ctx, f.prefix+":{"+id+"}:call:c1", "alone")
			}
			if _, _, err := f.st.EndStepAndClaim(f.ctx, id, 0, store.StepEnd{CallIDs: []string{"c1"}}, lease("w1", at(40)), at(5)); !errors.Is(err, store.ErrStale) {
				t.Fatalf("%s: the end of a step whose call is new: %v, want ErrStale", id, err)
			}
			f.done(t, id, "c1")
			if _, claimed, err := f.st.EndStepAndClaim(f.ctx, id, 0, early, lease("w1", at(40)), at(5)); err != nil || claimed == nil {
				t.Fatalf("%s: EndStepAndClaim with the list read before the commit = %+v, %v", id, claimed, err)
			}
			// The only call of an earlier step is not this step's list.
			f.commit(t, id, 1, "w1", "c2")
			if _, _, err := f.st.EndStepAndClaim(f.ctx, id, 1, store.StepEnd{CallIDs: []string{"c1"}}, lease("w1", at(40)), at(6)); !errors.Is(err, store.ErrStale) {
				t.Fatalf("%s: the end of step 1 with step 0's call for its list: %v, want ErrStale (c2 is new)", id, err)
			}
		}
	}},
	{"a_step_that_goes_on_or_waits_brings_no_view", func(t *testing.T, f *fixture) {
		f.committedSequential(t, "r1", "c1", "c2")
		if fin := f.finish(t, "r1", "c1", "t1", succeeded); !fin.FanIn || fin.View != nil {
			t.Fatalf("first of two sequential calls: fan in %v, view %s; want a fan in without a view", fin.FanIn, fin.View)
		}
		if fin := f.finish(t, "r1", "c2", "t1", succeeded); fin.View == nil {
			t.Fatal("the last sequential call brings no view")
		}

		f.committed(t, "r2", "c1", "c2")
		pending := store.CallOutcome{Status: pipeline.CallSuspended, Parking: parking(pipeline.ResumeReplay)}
		if fin := f.finish(t, "r2", "c1", "t1", pending); fin.View != nil {
			t.Fatal("a parked call brings a view")
		}
		if fin := f.finish(t, "r2", "c2", "t1", succeeded); !fin.FanIn || fin.View != nil {
			t.Fatalf("beside a parked call: fan in %v, view %s; want a fan in without a view", fin.FanIn, fin.View)
		}
	}},
	{"a_held_decision_a_big_result_or_a_wide_step_leaves_the_view_out", func(t *testing.T, f *fixture) {
		f.committed(t, "r1", "c1")
		if _, err := f.st.ClaimCall(f.ctx, "r1", "c1", lease("t1", at(60)), at(3)); err != nil {
			t.Fatal(err)
		}
		if res := f.decide(t, "r1", resume("d1", "c1"), at(3)); res.Outcome != store.DecisionHeld {
			t.Fatalf("decision for a running call = %+v, want held", res)
		}
		fin, err := f.st.FinishCall(f.ctx, "r1", "c1", "t1", succeeded, at(4))
		if err != nil || !fin.FanIn || fin.View != nil {
			t.Fatalf("with a decision held: fan in %v, view %s, %v; want a fan in without a view", fin.FanIn, fin.View, err)
		}

		f.committed(t, "r2", "c1")
		big := store.CallOutcome{Status: pipeline.CallSucceeded, Result: json.RawMessage(`"` + strings.Repeat("x", store.MaxViewBytes) + `"`)}
		if fin := f.finish(t, "r2", "c1", "t1", big); !fin.FanIn || fin.View != nil {
			t.Fatalf("a result of %d bytes: fan in %v, a view of %d bytes; want a fan in without a view", store.MaxViewBytes, fin.FanIn, len(fin.View))
		}

		ids := make([]string, store.MaxViewCalls+1)
		for i := range ids {
			ids[i] = fmt.Sprintf("c%d", i)
		}
		f.committed(t, "r3", ids...)
		for i, id := range ids {
			fin := f.finish(t, "r3", id, "t1", succeeded)
			if last := i == len(ids)-1; fin.FanIn != last || fin.View != nil {
				t.Fatalf("call %d of %d: fan in %v, view %s; want a fan in from the last, and no view", i+1, len(ids), fin.FanIn, fin.View)
			}
		}
	}},
	{"a_run_of_an_earlier_store_is_checked_for_decisions_before_its_view", func(t *testing.T, f *fixture) {
		// A run created before runs said they had no decision yet (nodec)
		// is looked at for held decisions and outcomes as before.
		f.committed(t, "r1", "c1")
		f.rdb.HDel(f.ctx, f.prefix+":{r1}:run", "nodec")
		if _, err := f.st.ClaimCall(f.ctx, "r1", "c1", lease("t1", at(60)), at(3)); err != nil {
			t.Fatal(err)
		}
		f.rdb.HSet(f.ctx, f.prefix+":{r1}:held", "c9", `{"decision_id":"d9"}`)
		if fin, err := f.st.FinishCall(f.ctx, "r1", "c1", "t1", succeeded, at(4)); err != nil || !fin.FanIn || fin.View != nil {
			t.Fatalf("with a decision held: fan in %v, view %s, %v; want a fan in without a view", fin.FanIn, fin.View, err)
		}
	}},
	{"a_run_whose_decision_outcomes_were_sent_brings_views_again", func(t *testing.T, f *fixture) {
		// A decided run's outbox stays as an empty stream once its outcomes
		// are sent; its later steps must still end from their views.
		f.parked(t, "r1", pipeline.ResumeReplay, at(2), "c1")
		f.decide(t, "r1", resume("d1", "c1"), at(3))
		fin := f.finish(t, "r1", "c1", "t1", succeeded)
		if !fin.FanIn || fin.View != nil {
			t.Fatalf("with the outcome unsent: fan in %v, view %s; want a fan in without a view", fin.FanIn, fin.View)
		}
		wantOutcomes(t, f.outcomes(t, "r1"), "d1:c1:applied:")
		if n := f.rdb.Exists(f.ctx, f.prefix+":{r1}:outcomes").Val(); n != 1 {
			t.Fatalf("the sent outbox: EXISTS = %d; the case needs the empty stream", n)
		}
		if _, claimed, err := f.st.EndStepAndClaim(f.ctx, "r1", 0, store.StepEnd{}, lease("w1", at(40)), at(5)); err != nil || claimed == nil {
			t.Fatalf("EndStepAndClaim = %+v, %v", claimed, err)
		}
		f.commit(t, "r1", 1, "w1", "c2")
		if fin := f.finish(t, "r1", "c2", "t1", succeeded); !fin.FanIn || fin.View == nil {
			t.Fatalf("the next step's last call: fan in %v, view %s; want both", fin.FanIn, fin.View)
		}
	}},
	{"a_view_not_written_under_the_deployments_key_is_refused", func(t *testing.T, f *fixture) {
		f.committed(t, "r1", "c1")
		fin := f.finish(t, "r1", "c1", "t1", succeeded)
		if fin.View == nil || fin.ViewMAC == "" {
			t.Fatalf("finish = %+v, want a view and its MAC", fin)
		}
		// Somebody who can publish to tool-results but not read Redis
		// changes a result, or makes a view up: neither is believed.
		forged := json.RawMessage(strings.Replace(string(fin.View), `{\"ok\":true}`, `{\"ok\":false}`, 1))
		if string(forged) == string(fin.View) {
			t.Fatalf("the view %s does not hold the result", fin.View)
		}
		for _, v := range []struct{ run, view, mac string }{
			{"r1", string(forged), fin.ViewMAC}, {"r1", string(fin.View), ""}, {"r1", string(fin.View), "zz"},
			{"r2", string(fin.View), fin.ViewMAC}, // r1's view replayed in a message about r2
		} {
			if _, err := f.st.DecodeView(f.ctx, v.run, json.RawMessage(v.view), v.mac); !errors.Is(err, store.ErrViewForged) {
				t.Errorf("DecodeView(%s, %.60s..., %q) = %v, want ErrViewForged", v.run, v.view, v.mac, err)
			}
		}
		// Under the key (which anyone who can read Redis has), a view that
		// is not one is an error too.
		key, err := hex.DecodeString(f.rdb.Get(f.ctx, f.prefix+":view-key").Val())
		if err != nil || len(key) == 0 {
			t.Fatalf("the views' key = %x, %v", key, err)
		}
		for _, raw := range []string{`{`, `{"run":["status"],"ids":[],"calls":[]}`, `{"run":["status","running"],"ids":["c1"],"calls":[]}`, `{"run":[],"ids":[],"calls":[]}`} {
			m := hmac.New(sha256.New, key)
			m.Write([]byte("r1\x00" + raw))
			if _, err := f.st.DecodeView(f.ctx, "r1", json.RawMessage(raw), hex.EncodeToString(m.Sum(nil))); err == nil || errors.Is(err, store.ErrViewForged) {
				t.Errorf("DecodeView(%s) = %v, want an error that says what is wrong with it", raw, err)
			}
		}
	}},
}
