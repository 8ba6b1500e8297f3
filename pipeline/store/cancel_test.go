package store_test

import (
	"slices"
	"testing"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/store"
)

var cancelCases = []contractCase{
	{"cancel_run_ends_a_created_run", func(t *testing.T, f *fixture) {
		f.created(t, "r1")
		if err := f.st.ScheduleSweep(f.ctx, "r1", at(5)); err != nil {
			t.Fatal(err)
		}
		run, err := f.st.CancelRun(f.ctx, "r1", "", "ops", "no longer needed", at(1))
		if err != nil {
			t.Fatalf("CancelRun: %v", err)
		}
		want := pipeline.Termination{Reason: pipeline.ReasonCancelled, Detail: "ops: no longer needed"}
		if run.Status != pipeline.RunDone || run.Termination == nil || *run.Termination != want || !run.UpdatedAt.Equal(at(1)) {
			t.Fatalf("run = %+v", run)
		}
		evs := f.events(t, "r1")
		wantTypes(t, typesOf(evs), pipeline.EventRunCreated, pipeline.EventRunFinished)
		wantJSON(t, evs[1].Data, `{"reason":"cancelled","detail":"ops: no longer needed"}`)
		// Ended, its result not yet out: the sweeper keeps it (the outbox).
		if due, _ := f.st.DueRuns(f.ctx, at(100), 10, at(200)); len(due) != 1 {
			t.Fatalf("a cancelled run whose result is not out is not due: %v", due)
		}
		_, err = f.st.ClaimStep(f.ctx, "r1", 0, lease("w1", at(30)), at(2))
		wantErr(t, err, store.ErrStale)
	}},
	{"cancel_run_cancels_the_unfinished_calls_of_a_running_run", func(t *testing.T, f *fixture) {
		f.committed(t, "r1", "c1", "c2", "c3")
		f.done(t, "r1", "c1")
		if _, err := f.st.ClaimCall(f.ctx, "r1", "c2", lease("t1", at(60)), at(5)); err != nil {
			t.Fatal(err)
		}
		if res := f.decide(t, "r1", resume("d1", "c3"), at(6)); res.Outcome != store.DecisionHeld {
			t.Fatalf("decision = %+v", res)
		}
		run, err := f.st.CancelRun(f.ctx, "r1", "", "ops", "stop", at(7))
		if err != nil {
			t.Fatalf("CancelRun: %v", err)
		}
		if run.Status != pipeline.RunDone || run.Termination.Detail != "ops: stop" {
			t.Fatalf("run = %+v", run)
		}
		calls, _ := f.st.StepCalls(f.ctx, "r1", 0)
		if calls[0].Status != pipeline.CallSucceeded || calls[0].Error != "" {
			t.Fatalf("a finished call changed: %+v", calls[0])
		}
		for _, c := range calls[1:] {
			if c.Status != pipeline.CallCancelled || c.Error != "run cancelled by ops: stop" || c.LeaseOwner != "" ||
				!c.UpdatedAt.Equal(at(7)) {
				t.Fatalf("call = %+v", c)
			}
		}
		evs := f.events(t, "r1")
		evs = evs[len(evs)-4:]
		wantTypes(t, typesOf(evs), pipeline.EventToolCallFinished, pipeline.EventToolCallFinished,
			pipeline.EventDecisionRejected, pipeline.EventRunFinished)
		if evs[0].CallID != "c2" || evs[1].CallID != "c3" || evs[2].CallID != "c3" {
			t.Fatalf("events = %+v", evs)
		}
		wantJSON(t, evs[0].Data, `{"status":"cancelled","error":"run cancelled by ops: stop"}`)
		wantJSON(t, evs[2].Data, `{"decision_id":"d1","reason":"run is done"}`)
		wantHeld(t, f, "r1")
		f.noEventsFrom(t, "r1", func() {
			if res := f.decide(t, "r1", resume("d1", "c3"), at(8)); res.Outcome != store.DecisionDuplicate {
				t.Fatalf("the dropped decision again = %+v", res)
			}
			// The tool worker that held c2 finds it cancelled.
			_, err := f.st.FinishCall(f.ctx, "r1", "c2", "t1", store.CallOutcome{Status: pipeline.CallSucceeded}, at(9))
			wantErr(t, err, store.ErrStale)
		})
	}},
	{"cancel_run_cancels_the_parked_calls_of_a_waiting_run", func(t *testing.T, f *fixture) {
		f.parked(t, "r1", pipeline.ResumeReplay, at(2), "c1", "c2")
		wantPending(t, f, store.PendingFilter{}, "r1/c1", "r1/c2")
		run, err := f.st.CancelRun(f.ctx, "r1", "", "", "", at(3))
		if err != nil {
			t.Fatalf("CancelRun: %v", err)
		}
		if run.Status != pipeline.RunDone || *run.Termination != (pipeline.Termination{Reason: pipeline.ReasonCancelled}) {
			t.Fatalf("run = %+v", run)
		}
		calls, _ := f.st.StepCalls(f.ctx, "r1", 0)
		for _, c := range calls {
			if c.Status != pipeline.CallCancelled || c.Error != "run cancelled" {
				t.Fatalf("call = %+v", c)
			}
		}
		wantPending(t, f, store.PendingFilter{})
	}},
	{"cancelling_a_run_twice_is_stale", func(t *testing.T, f *fixture) {
		f.claimed(t, "r1")
		if _, err := f.st.CancelRun(f.ctx, "r1", "", "ops", "", at(2)); err != nil {
			t.Fatal(err)
		}
		f.noEventsFrom(t, "r1", func() {
			run, err := f.st.CancelRun(f.ctx, "r1", "", "ops", "again", at(3))
			wantErr(t, err, store.ErrStale)
			if run.Status != pipeline.RunDone || run.Termination.Detail != "ops" {
				t.Fatalf("the refusal returned %+v, want the current run", run)
			}
		})
		// The worker inferring the step finds the run done.
		_, _, err := f.st.CommitStep(f.ctx, "r1", 0, "w1", commitOf("c1"), at(4))
		wantErr(t, err, store.ErrStale)
		_, err = f.st.CancelRun(f.ctx, "nope", "", "ops", "", at(3))
		wantErr(t, err, store.ErrNotFound)
	}},
	{"call_statuses_show_a_tool_worker_the_calls_a_cancel_ended", func(t *testing.T, f *fixture) {
		f.committed(t, "r1", "c1", "c2")
		f.committed(t, "r2", "c1")
		for _, id := range []string{"r1", "r2"} {
			if _, err := f.st.ClaimCall(f.ctx, id, "c1", lease("t1", at(60)), at(5)); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := f.st.CancelRun(f.ctx, "r1", "", "ops", "", at(6)); err != nil {
			t.Fatal(err)
		}
		refs := []store.CallRef{{RunID: "r1", CallID: "c1"}, {RunID: "r2", CallID: "c1"}, {RunID: "r1", CallID: "c2"}, {RunID: "r3", CallID: "c1"}}
		got, err := f.st.CallStatuses(f.ctx, refs)
		if err != nil {
			t.Fatalf("CallStatuses: %v", err)
		}
		want := []pipeline.ToolCallStatus{pipeline.CallCancelled, pipeline.CallRunning, pipeline.CallCancelled, ""}
		if !slices.Equal(got, want) {
			t.Fatalf("CallStatuses = %q, want %q", got, want)
		}
	}},
}
