package store_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/store"
)

var timeZero time.Time

// call reads one call.
func (f *fixture) call(t *testing.T, runID, callID string) pipeline.ToolCall {
	t.Helper()
	c, err := f.st.GetCall(f.ctx, runID, callID)
	if err != nil {
		t.Fatalf("GetCall(%s): %v", callID, err)
	}
	return c
}

// reconcileCases cover what a reconcile reads and the marks and schedule
// writes it makes.
var reconcileCases = []contractCase{
	{"snapshot_reads_the_run_its_current_calls_held_decisions_and_schedule", func(t *testing.T, f *fixture) {
		f.committed(t, "r1", "c1", "c2")
		f.decide(t, "r1", store.Decision{ID: "d-early", CallID: "c1", Action: store.ActionResume}, at(3))
		if err := f.st.ScheduleSweep(f.ctx, "r1", at(40)); err != nil {
			t.Fatal(err)
		}
		snap, err := f.st.Snapshot(f.ctx, "r1", 0, at(4))
		if err != nil {
			t.Fatalf("Snapshot: %v", err)
		}
		if snap.Run.Step != 0 || snap.Run.StepState != pipeline.StepTools || len(snap.Calls) != 2 ||
			snap.Calls[0].ID != "c1" || snap.Calls[1].ID != "c2" {
			t.Fatalf("run %+v calls %+v", snap.Run, snap.Calls)
		}
		if len(snap.Held) != 1 || snap.Held[0].ID != "d-early" || len(snap.Outcomes) != 1 || snap.Outcomes[0].Outcome != store.DecisionHeld {
			t.Fatalf("held %+v, outcomes %+v", snap.Held, snap.Outcomes)
		}
		if !snap.Scheduled.Equal(at(40)) {
			t.Fatalf("scheduled %v, want %v", snap.Scheduled, at(40))
		}
		if _, err := f.st.Snapshot(f.ctx, "nope", time.Minute, at(4)); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("Snapshot of an unknown run = %v, want ErrNotFound", err)
		}
	}},
	{"the_target_of_a_resume_is_read_with_the_run_scheduled", func(t *testing.T, f *fixture) {
		f.committed(t, "r1", "c1")
		run, call, err := f.st.ResumeTarget(f.ctx, "r1", "c1", at(30))
		if err != nil || run.ID != "r1" || call.ID != "c1" {
			t.Fatalf("ResumeTarget = %+v, %+v, %v", run, call, err)
		}
		if _, none, err := f.st.ResumeTarget(f.ctx, "r1", "c9", at(31)); err != nil || none.ID != "" {
			t.Fatalf("ResumeTarget of an unknown call = %+v, %v; want the zero call", none, err)
		}
		if snap, err := f.st.Snapshot(f.ctx, "r1", 0, at(1)); err != nil || !snap.Scheduled.Equal(at(31)) {
			t.Fatalf("scheduled %v (%v), want %v", snap.Scheduled, err, at(31))
		}
	}},
	{"a_snapshot_with_a_claim_takes_the_outcomes_for_its_reader_alone", func(t *testing.T, f *fixture) {
		f.committed(t, "r1", "c1")
		f.decide(t, "r1", store.Decision{ID: "d-early", CallID: "c1", Action: store.ActionResume}, at(3))
		snap, err := f.st.Snapshot(f.ctx, "r1", time.Minute, at(4))
		if err != nil || len(snap.Outcomes) != 1 || snap.Outcomes[0].DecisionID != "d-early" {
			t.Fatalf("claiming snapshot: outcomes %+v, %v", snap.Outcomes, err)
		}
		again, err := f.st.Snapshot(f.ctx, "r1", time.Minute, at(5))
		if err != nil || len(again.Outcomes) != 0 {
			t.Fatalf("a second claiming snapshot got outcomes %+v (%v): claimed by the first", again.Outcomes, err)
		}
		if got, err := f.st.ClaimOutcomes(f.ctx, "r1", time.Minute, at(5)); err != nil || len(got) != 0 {
			t.Fatalf("ClaimOutcomes got %+v (%v) under the snapshot's claim", got, err)
		}
		if plain, err := f.st.Snapshot(f.ctx, "r1", 0, at(5)); err != nil || len(plain.Outcomes) != 1 {
			t.Fatalf("a snapshot without a claim reads outcomes %+v (%v), want the one waiting", plain.Outcomes, err)
		}
		if err := f.st.OutcomesSent(f.ctx, "r1", snap.Outcomes); err != nil {
			t.Fatal(err)
		}
		if after, err := f.st.Snapshot(f.ctx, "r1", time.Minute, at(6)); err != nil || len(after.Outcomes) != 0 {
			t.Fatalf("outcomes %+v (%v) after they were sent", after.Outcomes, err)
		}
	}},
	{"an_unscheduled_run_reads_as_not_scheduled", func(t *testing.T, f *fixture) {
		f.created(t, "r1")
		snap, err := f.st.Snapshot(f.ctx, "r1", 0, at(1))
		if err != nil || !snap.Scheduled.IsZero() || len(snap.Calls) != 0 {
			t.Fatalf("Snapshot = %+v, %v", snap, err)
		}
	}},
	{"a_step_request_is_marked_for_its_step_only", func(t *testing.T, f *fixture) {
		f.created(t, "r1")
		if !f.run(t, "r1").RequestedAt.IsZero() {
			t.Fatal("a new run reads as requested")
		}
		if err := f.st.MarkRequested(f.ctx, "r1", 0, at(1)); err != nil {
			t.Fatal(err)
		}
		if got := f.run(t, "r1").RequestedAt; !got.Equal(at(1)) {
			t.Fatalf("step 0 marked at 1s, but the run reads requested at %v", got)
		}
		if _, err := f.st.ClaimStep(f.ctx, "r1", 0, lease("w1", at(30)), at(1)); err != nil {
			t.Fatal(err)
		}
		f.commit(t, "r1", 0, "w1")
		if _, _, err := f.st.EndStep(f.ctx, "r1", 0, store.StepEnd{}, at(5)); err != nil {
			t.Fatal(err)
		}
		if run := f.run(t, "r1"); run.Step != 1 || !run.RequestedAt.IsZero() {
			t.Fatalf("step 1 reads as requested by step 0's mark: %+v", run)
		}
		if err := f.st.MarkRequested(f.ctx, "r1", 0, at(6)); err != nil { // a late mark of the old step
			t.Fatal(err)
		}
		if !f.run(t, "r1").RequestedAt.IsZero() {
			t.Fatal("a late mark of step 0 marked step 1")
		}
	}},
	{"a_mark_never_recreates_a_run_that_is_gone", func(t *testing.T, f *fixture) {
		if err := f.st.MarkRequested(f.ctx, "gone", 3, at(1)); err != nil {
			t.Fatal(err)
		}
		if err := f.st.MarkDispatched(f.ctx, "gone", []pipeline.ToolCall{{ID: "c1", Status: pipeline.CallNew}}, at(1)); err != nil {
			t.Fatal(err)
		}
		if _, err := f.st.GetRun(f.ctx, "gone"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("GetRun after marks of an unknown run = %v, want ErrNotFound", err)
		}
		if _, err := f.st.GetCall(f.ctx, "gone", "c1"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("GetCall after marks of an unknown run = %v, want ErrNotFound", err)
		}
	}},
	{"a_dispatch_mark_holds_until_a_decision_resumes_the_call", func(t *testing.T, f *fixture) {
		f.claimed(t, "r1")
		_, calls, err := f.st.CommitStep(f.ctx, "r1", 0, "w1", suspendedCommit(pipeline.ResumeReplay, "c1"), at(2))
		if err != nil {
			t.Fatal(err)
		}
		calls[0].Status = pipeline.CallNew // as if it had been published new
		if err := f.st.MarkDispatched(f.ctx, "r1", calls, at(2)); err != nil {
			t.Fatal(err)
		}
		res := f.decide(t, "r1", store.Decision{ID: "d1", CallID: "c1", Action: store.ActionResume}, at(3))
		if res.Call.Status != pipeline.CallResuming || !res.Call.DispatchedAt.IsZero() {
			t.Fatalf("a resumed call must read as not dispatched: %+v", res.Call)
		}
		if err := f.st.MarkDispatched(f.ctx, "r1", calls, at(4)); err != nil { // a late mark of the call before the decision
			t.Fatal(err)
		}
		if c := f.call(t, "r1", "c1"); !c.DispatchedAt.IsZero() {
			t.Fatal("a late mark of the new call marked its resumed request")
		}
		if err := f.st.MarkDispatched(f.ctx, "r1", []pipeline.ToolCall{res.Call}, at(5)); err != nil {
			t.Fatal(err)
		}
		if c := f.call(t, "r1", "c1"); !c.DispatchedAt.Equal(at(5)) {
			t.Fatalf("the resumed call's mark reads %v, want %v", c.DispatchedAt, at(5))
		}
		c, err := f.st.ClaimCall(f.ctx, "r1", "c1", lease("t1", at(60)), at(6))
		if err != nil || !c.DispatchedAt.IsZero() {
			t.Fatalf("a claimed call reads as dispatched for its claim: %+v, %v", c, err)
		}
		if err := f.st.MarkDispatched(f.ctx, "r1", []pipeline.ToolCall{c}, at(7)); err != nil { // its claim died: sent again
			t.Fatal(err)
		}
		if got := f.call(t, "r1", "c1").DispatchedAt; !got.Equal(at(7)) {
			t.Fatalf("the re-sent claim's mark reads %v, want %v", got, at(7))
		}
	}},
	{"reschedule_waiting_changes_only_the_schedule_that_was_read", func(t *testing.T, f *fixture) {
		if err := f.st.ScheduleSweep(f.ctx, "r1", at(10)); err != nil {
			t.Fatal(err)
		}
		// Someone moved the run on since at(5) was read: nothing changes.
		if ok, err := f.st.RescheduleWaiting(f.ctx, pipeline.Run{ID: "r1"}, nil, at(5), at(100)); err != nil || ok {
			t.Fatalf("RescheduleWaiting with a stale read = %v, %v", ok, err)
		}
		if ok, err := f.st.RescheduleWaiting(f.ctx, pipeline.Run{ID: "r1"}, nil, at(10), at(100)); err != nil || !ok {
			t.Fatalf("RescheduleWaiting = %v, %v", ok, err)
		}
		if ids, _ := f.st.DueRuns(f.ctx, at(50), 10, at(200)); len(ids) != 0 {
			t.Fatalf("due before its new time: %v", ids)
		}
		if ok, err := f.st.RescheduleWaiting(f.ctx, pipeline.Run{ID: "r1"}, nil, at(100), at(0)); err != nil || !ok {
			t.Fatalf("RescheduleWaiting to another time = %v, %v", ok, err)
		}
		if ok, err := f.st.RescheduleWaiting(f.ctx, pipeline.Run{ID: "r1"}, nil, at(0), timeZero); err != nil || !ok {
			t.Fatalf("RescheduleWaiting off the schedule = %v, %v", ok, err)
		}
		if ok, err := f.st.RescheduleWaiting(f.ctx, pipeline.Run{ID: "r1"}, nil, at(0), at(1)); err != nil || ok {
			t.Fatalf("RescheduleWaiting of a run read scheduled that is not = %v, %v", ok, err)
		}
		if ok, err := f.st.RescheduleWaiting(f.ctx, pipeline.Run{ID: "r1"}, nil, timeZero, at(1)); err != nil || !ok {
			t.Fatalf("RescheduleWaiting of a run read unscheduled = %v, %v", ok, err)
		}
		if ids, _ := f.st.DueRuns(f.ctx, at(1), 10, at(200)); len(ids) != 1 {
			t.Fatalf("due at 1s = %v", ids)
		}
	}},
	{"a_released_lease_is_free_to_claim_at_once", func(t *testing.T, f *fixture) {
		f.claimed(t, "r1") // w1 until 30s
		if err := f.st.ReleaseStepLease(f.ctx, "r1", 0, "w2"); !errors.Is(err, store.ErrLeaseLost) {
			t.Fatalf("release by another owner = %v, want ErrLeaseLost", err)
		}
		if err := f.st.ReleaseStepLease(f.ctx, "r1", 0, "w1"); err != nil {
			t.Fatal(err)
		}
		if _, err := f.st.ClaimStep(f.ctx, "r1", 0, lease("w2", at(60)), at(2)); err != nil {
			t.Fatalf("claim after release, well within the old lease: %v", err)
		}
		f.commit(t, "r1", 0, "w2", "c1")
		if _, err := f.st.ClaimCall(f.ctx, "r1", "c1", lease("t1", at(60)), at(3)); err != nil {
			t.Fatal(err)
		}
		if err := f.st.ReleaseCallLease(f.ctx, "r1", "c1", "t1"); err != nil {
			t.Fatal(err)
		}
		c, err := f.st.ClaimCall(f.ctx, "r1", "c1", lease("t2", at(60)), at(4))
		if err != nil || c.Attempts != 2 {
			t.Fatalf("claim after release = %+v, %v", c, err)
		}
		if _, err := f.st.FinishCall(f.ctx, "r1", "c1", "t1", store.CallOutcome{Status: pipeline.CallSucceeded}, at(5)); !errors.Is(err, store.ErrLeaseLost) {
			t.Fatalf("a commit by the released claim = %v, want ErrLeaseLost", err)
		}
	}},
}
