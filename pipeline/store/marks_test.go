package store_test

import (
	"slices"
	"testing"
	"time"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/store"
)

var markCases = []contractCase{
	{"a_finished_call_keeps_no_mark", func(t *testing.T, f *fixture) {
		// The mark is read for a new, resuming or running call only; a
		// finished or parked one empties it (finish_call.lua).
		f.claimed(t, "r1")
		c := commitOf("c1", "c2", "c3")
		c.Calls[0].DispatchedBy, c.Calls[1].DispatchedBy = "w-a", "w-a"
		if _, _, err := f.st.CommitStep(f.ctx, "r1", 0, "w1", c, at(2)); err != nil {
			t.Fatal(err)
		}
		f.done(t, "r1", "c1")
		f.finish(t, "r1", "c2", "t1", store.CallOutcome{Status: pipeline.CallSuspended, Parking: parking(pipeline.ResumeReplay)})
		f.done(t, "r1", "c3") // never marked: gains no field
		for id, want := range map[string][]any{"c1": {""}, "c2": {""}, "c3": {nil}} {
			got, err := f.rdb.HMGet(f.ctx, f.prefix+":{r1}:call:"+id, "sent").Result()
			if err != nil || !slices.Equal(got, want) {
				t.Errorf("call %s's mark = %q, %v; want %q", id, got, err, want)
			}
		}
		for _, call := range f.stepCalls(t, "r1", 0) {
			if !call.DispatchedAt.IsZero() || call.DispatchedBy != "" {
				t.Errorf("call %s reads as sent at %v by %q", call.ID, call.DispatchedAt, call.DispatchedBy)
			}
		}
	}},
	{"a_call_marked_as_being_sent_by_its_committer_reads_back_with_its_worker", func(t *testing.T, f *fixture) {
		f.claimed(t, "r1")
		c := commitOf("c1", "c2")
		c.Calls[0].DispatchedBy = "w-a"
		if _, _, err := f.st.CommitStep(f.ctx, "r1", 0, "w1", c, at(2)); err != nil {
			t.Fatal(err)
		}
		calls := f.stepCalls(t, "r1", 0)
		if !calls[0].DispatchedAt.Equal(at(2)) || calls[0].DispatchedBy != "w-a" {
			t.Fatalf("c1 marked at %v by %q, want at the commit by w-a", calls[0].DispatchedAt, calls[0].DispatchedBy)
		}
		if !calls[1].DispatchedAt.IsZero() || calls[1].DispatchedBy != "" {
			t.Fatalf("c2 is marked: %v by %q", calls[1].DispatchedAt, calls[1].DispatchedBy)
		}
		// The worker could not publish c1: it takes its mark back.
		if err := f.st.ClearDispatched(f.ctx, "r1", calls[:1]); err != nil {
			t.Fatal(err)
		}
		if got := f.stepCalls(t, "r1", 0)[0]; !got.DispatchedAt.IsZero() || got.DispatchedBy != "" {
			t.Fatalf("after ClearDispatched: marked at %v by %q", got.DispatchedAt, got.DispatchedBy)
		}
		// A mark written after a publish is nobody's, and a late take-back
		// of the older mark leaves it.
		if err := f.st.MarkDispatched(f.ctx, "r1", calls[:1], at(5)); err != nil {
			t.Fatal(err)
		}
		if err := f.st.ClearDispatched(f.ctx, "r1", calls[:1]); err != nil {
			t.Fatal(err)
		}
		if got := f.stepCalls(t, "r1", 0)[0]; !got.DispatchedAt.Equal(at(5)) || got.DispatchedBy != "" {
			t.Fatalf("after MarkDispatched and a late take-back: %v by %q, want at 5s by nobody", got.DispatchedAt, got.DispatchedBy)
		}
	}},
	{"only_a_new_call_is_marked_as_being_sent_by_a_worker_id_without_at", func(t *testing.T, f *fixture) {
		f.claimed(t, "r1")
		for _, c := range []store.StepCommit{suspendedCommit(pipeline.ResumeReplay, "c1"), commitOf("c1")} {
			c.Calls[0].DispatchedBy = "w@a"
			if c.Calls[0].Status == pipeline.CallSuspended {
				c.Calls[0].DispatchedBy = "w-a"
			}
			f.noEventsFrom(t, "r1", func() {
				_, _, err := f.st.CommitStep(f.ctx, "r1", 0, "w1", c, at(2))
				wantErr(t, err, store.ErrInvalid)
			})
		}
	}},
	{"a_mark_of_a_resumed_call_reads_back_whatever_its_decision_id_holds", func(t *testing.T, f *fixture) {
		f.parked(t, "r1", pipeline.ResumeReplay, at(2), "c1")
		res := f.decide(t, "r1", resume("d@1@2", "c1"), at(3))
		if res.Outcome != store.DecisionApplied {
			t.Fatalf("decision = %+v", res)
		}
		if err := f.st.MarkDispatched(f.ctx, "r1", []pipeline.ToolCall{res.Call}, at(4)); err != nil {
			t.Fatal(err)
		}
		if got := f.stepCalls(t, "r1", 0)[0]; !got.DispatchedAt.Equal(at(4)) {
			t.Fatalf("resumed by d@1@2, marked at %v, want %v", got.DispatchedAt, at(4))
		}
	}},
	{"heartbeat_lists_the_workers_heard_from_within_the_ttl", func(t *testing.T, f *fixture) {
		beat := func(w string, now time.Time) []string {
			t.Helper()
			live, err := f.st.Heartbeat(f.ctx, w, now, 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for w := range live {
				out = append(out, w)
			}
			slices.Sort(out)
			return out
		}
		beat("w-a", at(0))
		if got := beat("w-b", at(5)); !slices.Equal(got, []string{"w-a", "w-b"}) {
			t.Fatalf("alive at 5s: %v", got)
		}
		if got := beat("w-b", at(11)); !slices.Equal(got, []string{"w-b"}) {
			t.Fatalf("alive at 11s: %v, want w-a gone quiet", got)
		}
		if got := beat("w-a", at(12)); !slices.Equal(got, []string{"w-a", "w-b"}) {
			t.Fatalf("alive at 12s: %v, want w-a back", got)
		}
	}},
}

// stepCalls reads the calls of a step, failing t on an error.
func (f *fixture) stepCalls(t *testing.T, runID string, step int) []pipeline.ToolCall {
	t.Helper()
	calls, err := f.st.StepCalls(f.ctx, runID, step)
	if err != nil {
		t.Fatalf("StepCalls: %v", err)
	}
	return calls
}
