package store_test

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/store"
)

var decisionCases = []contractCase{
	{"resume_in_replay_mode_resumes_the_call_and_the_run", func(t *testing.T, f *fixture) {
		f.parked(t, "r1", pipeline.ResumeReplay, at(2), "c1", "c2")
		res := f.decide(t, "r1", resume("d1", "c1"), at(10))
		if res.Outcome != store.DecisionApplied || res.Reason != "" {
			t.Fatalf("result = %+v", res)
		}
		want := pipeline.Decided{ID: "d1", Action: "resume", DecidedBy: "alice", Reason: "looks fine"}
		if c := res.Call; c.Status != pipeline.CallResuming || c.Decision == nil || *c.Decision != want ||
			c.Attempts != 0 || c.Parking == nil || !c.UpdatedAt.Equal(at(10)) || c.OrigArgs != nil {
			t.Fatalf("call = %+v", c)
		}
		wantJSON(t, res.Call.Arguments, `{"n":0}`)
		if r := res.Run; r.Status != pipeline.RunRunning || r.Termination != nil || !r.UpdatedAt.Equal(at(10)) {
			t.Fatalf("run = %+v", r)
		}
		evs := f.events(t, "r1")
		evs = evs[len(evs)-2:]
		wantTypes(t, typesOf(evs), pipeline.EventDecisionApplied, pipeline.EventRunResumed)
		wantJSON(t, evs[0].Data, `{"decision_id":"d1","action":"resume","decided_by":"alice","reason":"looks fine","timeout":false,"status":"resuming"}`)
		wantJSON(t, evs[1].Data, `{"decision_id":"d1"}`)
		for _, ev := range evs {
			if ev.CallID != "c1" || ev.Step != 0 || !ev.At.Equal(at(10)) {
				t.Fatalf("event = %+v", ev)
			}
		}
		wantPending(t, f, store.PendingFilter{}, "r1/c2")
		// The resumed call runs afresh: attempt 1, tool_call.started.
		call, err := f.st.ClaimCall(f.ctx, "r1", "c1", lease("t1", at(60)), at(11))
		if err != nil || call.Attempts != 1 {
			t.Fatalf("ClaimCall = %+v, %v", call, err)
		}
		types := f.eventTypes(t, "r1")
		wantTypes(t, types[len(types)-1:], pipeline.EventToolCallStarted)
		// A decision while the run runs leaves the run as it is.
		res = f.decide(t, "r1", resume("d2", "c2"), at(12))
		if res.Outcome != store.DecisionApplied || res.Run.Status != pipeline.RunRunning {
			t.Fatalf("second decision = %+v", res)
		}
		types = f.eventTypes(t, "r1")
		wantTypes(t, types[len(types)-1:], pipeline.EventDecisionApplied)
	}},
	{"resume_in_pass_decision_to_tool_mode_swaps_the_arguments", func(t *testing.T, f *fixture) {
		f.parked(t, "r1", pipeline.ResumePassDecisionToTool, at(2), "c1", "c2")
		d := resume("d1", "c1")
		d.Payload = json.RawMessage(`{"amount":5}`)
		res := f.decide(t, "r1", d, at(10))
		if res.Outcome != store.DecisionApplied || res.Call.Status != pipeline.CallResuming {
			t.Fatalf("result = %+v", res)
		}
		wantJSON(t, res.Call.Arguments, `{"amount":5}`)
		wantJSON(t, res.Call.OrigArgs, `{"n":0}`)
		// Without a payload there is nothing to pass.
		f.noCallChange(t, "r1", "c2", func() {
			res = f.decide(t, "r1", resume("d2", "c2"), at(11))
		})
		if res.Outcome != store.DecisionRejected || res.Reason != "pass_decision_to_tool needs a payload" ||
			res.Call.Status != pipeline.CallSuspended {
			t.Fatalf("result = %+v", res)
		}
		wantRejected(t, f, "r1", "c2", "d2", res.Reason)
	}},
	{"resume_in_use_decision_as_result_mode_resumes_then_finishes_the_call", func(t *testing.T, f *fixture) {
		f.parked(t, "r1", pipeline.ResumeUseDecisionAsResult, at(2), "c1", "c2")
		d := resume("d1", "c1")
		d.Payload = json.RawMessage(`{"approved":true}`)
		res := f.decide(t, "r1", d, at(10))
		if res.Outcome != store.DecisionApplied || res.Call.Status != pipeline.CallSucceeded {
			t.Fatalf("result = %+v", res)
		}
		wantJSON(t, res.Call.Result, `{"approved":true}`)
		evs := f.events(t, "r1")
		evs = evs[len(evs)-3:]
		wantTypes(t, typesOf(evs), pipeline.EventDecisionApplied, pipeline.EventRunResumed, pipeline.EventToolCallFinished)
		// suspended → resuming → succeeded: the table has no shortcut.
		wantJSON(t, evs[0].Data, `{"decision_id":"d1","action":"resume","decided_by":"alice","reason":"looks fine","timeout":false,"status":"resuming"}`)
		wantJSON(t, evs[2].Data, `{"status":"succeeded","result":{"approved":true}}`)
		// No payload: the result is null.
		d = resume("d2", "c2")
		d.Payload = json.RawMessage(` null `)
		res = f.decide(t, "r1", d, at(11))
		if res.Outcome != store.DecisionApplied || res.Call.Status != pipeline.CallSucceeded || string(res.Call.Result) != "null" {
			t.Fatalf("result = %+v", res)
		}
		evs = f.events(t, "r1")
		evs = evs[len(evs)-2:]
		wantTypes(t, typesOf(evs), pipeline.EventDecisionApplied, pipeline.EventToolCallFinished)
		wantJSON(t, evs[1].Data, `{"status":"succeeded","result":null}`)
		// Every call is terminal: the step can end.
		if _, _, err := f.st.EndStep(f.ctx, "r1", 0, store.StepEnd{}, at(12)); err != nil {
			t.Fatalf("EndStep: %v", err)
		}
	}},
	{"cancel_cancels_the_call_and_says_who_and_why", func(t *testing.T, f *fixture) {
		f.parked(t, "r1", pipeline.ResumeReplay, at(2), "c1", "c2")
		d := store.Decision{ID: "d1", CallID: "c1", Action: store.ActionCancel, DecidedBy: "bob", Reason: "too much"}
		res := f.decide(t, "r1", d, at(10))
		if res.Outcome != store.DecisionApplied || res.Call.Status != pipeline.CallCancelled ||
			res.Call.Error != "cancelled by bob: too much" || res.Run.Status != pipeline.RunRunning {
			t.Fatalf("result = %+v", res)
		}
		evs := f.events(t, "r1")
		evs = evs[len(evs)-3:]
		wantTypes(t, typesOf(evs), pipeline.EventDecisionApplied, pipeline.EventRunResumed, pipeline.EventToolCallFinished)
		wantJSON(t, evs[0].Data, `{"decision_id":"d1","action":"cancel","decided_by":"bob","reason":"too much","timeout":false,"status":"cancelled"}`)
		wantJSON(t, evs[2].Data, `{"status":"cancelled","error":"cancelled by bob: too much"}`)
		// The sweeper's timeout says so.
		d = store.Decision{ID: "d2", CallID: "c2", Action: store.ActionCancel, DecidedBy: "sweeper", Reason: "30m passed", Timeout: true}
		res = f.decide(t, "r1", d, at(11))
		if res.Call.Status != pipeline.CallCancelled || res.Call.Error != "approval timed out: 30m passed" ||
			res.Call.Decision == nil || !res.Call.Decision.Timeout {
			t.Fatalf("result = %+v", res)
		}
		evs = f.events(t, "r1")
		wantJSON(t, evs[len(evs)-2].Data, `{"decision_id":"d2","action":"cancel","decided_by":"sweeper","reason":"30m passed","timeout":true,"status":"cancelled"}`)
		if _, _, err := f.st.EndStep(f.ctx, "r1", 0, store.StepEnd{}, at(12)); err != nil {
			t.Fatalf("EndStep: %v", err)
		}
	}},
	{"a_repeated_decision_id_is_a_duplicate", func(t *testing.T, f *fixture) {
		f.parked(t, "r1", pipeline.ResumeReplay, at(2), "c1", "c2")
		f.decide(t, "r1", resume("d1", "c1"), at(10))
		for _, d := range []store.Decision{resume("d1", "c1"), resume("d1", "c2")} {
			f.noEventsFrom(t, "r1", func() {
				res := f.decide(t, "r1", d, at(11))
				if res.Outcome != store.DecisionDuplicate || res.Run.Status != pipeline.RunRunning || res.Call.ID != d.CallID {
					t.Fatalf("result = %+v", res)
				}
			})
		}
		if call, _ := f.st.GetCall(f.ctx, "r1", "c2"); call.Status != pipeline.CallSuspended {
			t.Fatalf("a duplicate changed another call: %+v", call)
		}
		// A rejected id is seen too.
		bad := resume("d2", "c2")
		bad.ArgsHash = "nope"
		if res := f.decide(t, "r1", bad, at(12)); res.Outcome != store.DecisionRejected {
			t.Fatalf("result = %+v", res)
		}
		f.noEventsFrom(t, "r1", func() {
			if res := f.decide(t, "r1", resume("d2", "c2"), at(13)); res.Outcome != store.DecisionDuplicate {
				t.Fatalf("result = %+v", res)
			}
		})
	}},
	{"a_decision_for_an_unknown_run_is_not_found", func(t *testing.T, f *fixture) {
		f.noEventsFrom(t, "nope", func() {
			_, err := f.st.ApplyDecision(f.ctx, "nope", resume("d1", "c1"), at(60), at(1))
			wantErr(t, err, store.ErrNotFound)
		})
		_, err := f.st.HeldDecisions(f.ctx, "nope")
		wantErr(t, err, store.ErrNotFound)
		wantErr(t, f.st.DropHeld(f.ctx, "nope", "c1", "d1", "x", at(1)), store.ErrNotFound)
		if _, err := f.st.GetRun(f.ctx, "nope"); err == nil {
			t.Fatal("a refused decision created the run")
		}
	}},
	{"a_decision_for_a_done_run_is_rejected", func(t *testing.T, f *fixture) {
		f.parked(t, "r1", pipeline.ResumeReplay, at(2), "c1")
		if _, err := f.st.FinishRun(f.ctx, "r1", pipeline.Termination{Reason: pipeline.ReasonError}, at(3)); err != nil {
			t.Fatal(err)
		}
		var res store.DecisionResult
		f.noCallChange(t, "r1", "c1", func() { res = f.decide(t, "r1", resume("d1", "c1"), at(10)) })
		if res.Outcome != store.DecisionRejected || res.Reason != "run is done" || res.Run.Status != pipeline.RunDone {
			t.Fatalf("result = %+v", res)
		}
		wantRejected(t, f, "r1", "c1", "d1", "run is done")
	}},
	{"a_decision_for_a_call_that_is_not_suspended_is_rejected", func(t *testing.T, f *fixture) {
		f.parked(t, "r1", pipeline.ResumeReplay, at(2), "c1")
		f.decide(t, "r1", resume("d1", "c1"), at(10))
		var res store.DecisionResult
		f.noCallChange(t, "r1", "c1", func() { res = f.decide(t, "r1", resume("d2", "c1"), at(11)) })
		if res.Outcome != store.DecisionRejected || res.Reason != "call is resuming, not suspended" {
			t.Fatalf("result = %+v", res)
		}
		wantRejected(t, f, "r1", "c1", "d2", res.Reason)
		f.done(t, "r1", "c1")
		cancel := store.Decision{ID: "d3", CallID: "c1", Action: store.ActionCancel}
		f.noCallChange(t, "r1", "c1", func() { res = f.decide(t, "r1", cancel, at(12)) })
		if res.Outcome != store.DecisionRejected || res.Reason != "call is succeeded, not suspended" ||
			res.Call.Status != pipeline.CallSucceeded {
			t.Fatalf("result = %+v", res)
		}
		wantRejected(t, f, "r1", "c1", "d3", res.Reason)
	}},
	{"a_decision_quoting_other_arguments_is_rejected", func(t *testing.T, f *fixture) {
		_ = f.parked(t, "r1", pipeline.ResumeReplay, at(2), "c1")
		d := resume("d1", "c1")
		d.ArgsHash = "0000"
		var res store.DecisionResult
		f.noCallChange(t, "r1", "c1", func() { res = f.decide(t, "r1", d, at(10)) })
		if res.Outcome != store.DecisionRejected || res.Reason != "args_hash does not match the parked arguments" ||
			res.Run.Status != pipeline.RunWaiting {
			t.Fatalf("result = %+v", res)
		}
		wantRejected(t, f, "r1", "c1", "d1", res.Reason)
		d.ID, d.ArgsHash = "d2", res.Call.Parking.ArgsHash
		if res = f.decide(t, "r1", d, at(11)); res.Outcome != store.DecisionApplied {
			t.Fatalf("with the right hash: %+v", res)
		}
	}},
	{"a_resume_with_a_dispatcher_marks_the_call_as_being_sent_by_it", func(t *testing.T, f *fixture) {
		f.parked(t, "r1", pipeline.ResumeReplay, at(2), "c1", "c2")
		d := resume("d1", "c1")
		d.Dispatcher = "w-x"
		res := f.decide(t, "r1", d, at(3))
		if res.Outcome != store.DecisionApplied || res.Call.Status != pipeline.CallResuming ||
			res.Call.DispatchedBy != "w-x" || !res.Call.DispatchedAt.Equal(at(3)) {
			t.Fatalf("result = %+v; want the call resuming, marked as being sent by w-x at 3s", res)
		}
		// Without a dispatcher the call is left unmarked: its reconcile
		// publishes it, then marks it.
		if res = f.decide(t, "r1", resume("d2", "c2"), at(4)); res.Call.DispatchedBy != "" || !res.Call.DispatchedAt.IsZero() {
			t.Fatalf("result = %+v; want the call unmarked", res)
		}
		// The worker takes the mark back when it could not publish.
		if err := f.st.ClearDispatched(f.ctx, "r1", []pipeline.ToolCall{f.call(t, "r1", "c1")}); err != nil {
			t.Fatal(err)
		}
		if c := f.call(t, "r1", "c1"); c.DispatchedBy != "" || !c.DispatchedAt.IsZero() {
			t.Fatalf("call after the take-back = %+v", c)
		}
	}},
	{"a_call_decided_again_keeps_no_earlier_decisions_signer", func(t *testing.T, f *fixture) {
		f.parked(t, "r1", pipeline.ResumeReplay, at(1), "c1")
		signed := resume("d1", "c1")
		signed.SignedBy = "erp"
		if res := f.decide(t, "r1", signed, at(2)); res.Outcome != store.DecisionApplied || f.call(t, "r1", "c1").Decision.SignedBy != "erp" {
			t.Fatalf("the signed decision = %+v", res)
		}
		// The tool answers pending: the call parks again, and a decision
		// nobody signed (a timeout's) decides it.
		if _, err := f.st.ClaimCall(f.ctx, "r1", "c1", lease("t1", at(60)), at(3)); err != nil {
			t.Fatal(err)
		}
		if _, err := f.st.FinishCall(f.ctx, "r1", "c1", "t1",
			store.CallOutcome{Status: pipeline.CallSuspended, Parking: parking(pipeline.ResumeReplay)}, at(4)); err != nil {
			t.Fatal(err)
		}
		unsigned := store.Decision{ID: "d2", CallID: "c1", Action: store.ActionCancel, DecidedBy: "timeout"}
		if res := f.decide(t, "r1", unsigned, at(5)); res.Outcome != store.DecisionApplied {
			t.Fatalf("the unsigned decision = %+v", res)
		}
		if dec := f.call(t, "r1", "c1").Decision; dec == nil || dec.ID != "d2" || dec.SignedBy != "" {
			t.Fatalf("the call's decision = %+v, want d2 signed by nobody", dec)
		}
	}},
	{"an_early_decision_is_held_and_applied_once_the_call_parks", func(t *testing.T, f *fixture) {
		f.committed(t, "r1", "c1")
		res, err := f.st.ApplyDecision(f.ctx, "r1", resume("d1", "c1"), at(60), at(3))
		if err != nil || res.Outcome != store.DecisionHeld || res.Reason == "" || res.Call.Status != pipeline.CallNew {
			t.Fatalf("ApplyDecision = %+v, %v", res, err)
		}
		evs := f.events(t, "r1")
		last := evs[len(evs)-1]
		if last.Type != pipeline.EventDecisionHeld || last.CallID != "c1" || last.Step != 0 {
			t.Fatalf("last event = %+v", last)
		}
		wantJSON(t, last.Data, `{"decision_id":"d1","hold_until":"`+at(60).Format(time.RFC3339)+`"}`)
		wantHeld(t, f, "r1", store.HeldDecision{Decision: resume("d1", "c1"), Until: at(60)})
		// A redelivery of the held decision changes nothing, its hold
		// included; another decision for the call is rejected.
		f.noEventsFrom(t, "r1", func() {
			res, err := f.st.ApplyDecision(f.ctx, "r1", resume("d1", "c1"), at(90), at(4))
			if err != nil || res.Outcome != store.DecisionHeld {
				t.Fatalf("redelivery = %+v, %v", res, err)
			}
		})
		res = f.decide(t, "r1", resume("d2", "c1"), at(5))
		if res.Outcome != store.DecisionRejected || res.Reason != "another decision is already held for this call" {
			t.Fatalf("second decision = %+v", res)
		}
		wantRejected(t, f, "r1", "c1", "d2", res.Reason)
		wantHeld(t, f, "r1", store.HeldDecision{Decision: resume("d1", "c1"), Until: at(60)})
		// Still held while the call runs.
		if _, err := f.st.ClaimCall(f.ctx, "r1", "c1", lease("t1", at(60)), at(6)); err != nil {
			t.Fatal(err)
		}
		if res = f.decide(t, "r1", resume("d1", "c1"), at(7)); res.Outcome != store.DecisionHeld {
			t.Fatalf("while running = %+v", res)
		}
		if _, err := f.st.FinishCall(f.ctx, "r1", "c1", "t1",
			store.CallOutcome{Status: pipeline.CallSuspended, Parking: parking(pipeline.ResumeReplay)}, at(8)); err != nil {
			t.Fatal(err)
		}
		res = f.decide(t, "r1", resume("d1", "c1"), at(9))
		if res.Outcome != store.DecisionApplied || res.Call.Status != pipeline.CallResuming {
			t.Fatalf("once parked = %+v", res)
		}
		wantHeld(t, f, "r1")
		if res = f.decide(t, "r1", resume("d1", "c1"), at(10)); res.Outcome != store.DecisionDuplicate {
			t.Fatalf("after applying = %+v", res)
		}
	}},
	{"drop_held_rejects_a_decision_whose_call_never_parked", func(t *testing.T, f *fixture) {
		f.committed(t, "r1", "c1")
		// A call the run does not have (yet) holds a decision too.
		res := f.decide(t, "r1", resume("d1", "c9"), at(3))
		if res.Outcome != store.DecisionHeld || res.Call.ID != "" || res.Run.ID != "r1" {
			t.Fatalf("result = %+v", res)
		}
		evs := f.events(t, "r1")
		if last := evs[len(evs)-1]; last.Type != pipeline.EventDecisionHeld || last.Step != 0 || last.CallID != "c9" {
			t.Fatalf("last event = %+v", last)
		}
		f.noEventsFrom(t, "r1", func() {
			wantErr(t, f.st.DropHeld(f.ctx, "r1", "c9", "d2", "hold expired", at(4)), store.ErrStale)
			wantErr(t, f.st.DropHeld(f.ctx, "r1", "c1", "d1", "hold expired", at(4)), store.ErrStale)
		})
		if err := f.st.DropHeld(f.ctx, "r1", "c9", "d1", "hold expired", at(5)); err != nil {
			t.Fatalf("DropHeld: %v", err)
		}
		wantRejected(t, f, "r1", "c9", "d1", "hold expired")
		wantHeld(t, f, "r1")
		f.noEventsFrom(t, "r1", func() {
			wantErr(t, f.st.DropHeld(f.ctx, "r1", "c9", "d1", "hold expired", at(6)), store.ErrStale)
			if res := f.decide(t, "r1", resume("d1", "c9"), at(6)); res.Outcome != store.DecisionDuplicate {
				t.Fatalf("after the drop = %+v", res)
			}
		})
	}},
	{"end_step_returns_the_decisions_still_held_when_it_ends_the_run", func(t *testing.T, f *fixture) {
		f.committed(t, "r1", "c1")
		held := f.decide(t, "r1", resume("d1", "c9"), at(3)) // a call the run never has
		if held.Outcome != store.DecisionHeld {
			t.Fatalf("result = %+v", held)
		}
		f.done(t, "r1", "c1")
		run, got, err := f.st.EndStep(f.ctx, "r1", 0, store.StepEnd{}, at(5))
		if err != nil || run.Status != pipeline.RunRunning || len(got) != 0 {
			t.Fatalf("EndStep going on = %+v, %+v, %v; want no held decisions", run, got, err)
		}
		if _, err := f.st.ClaimStep(f.ctx, "r1", 1, lease("w1", at(60)), at(6)); err != nil {
			t.Fatalf("ClaimStep(1): %v", err)
		}
		f.commit(t, "r1", 1, "w1")
		run, got, err = f.st.EndStep(f.ctx, "r1", 1, store.StepEnd{Finish: &pipeline.Termination{Reason: pipeline.ReasonNaturalEnd}}, at(7))
		want, _ := f.st.HeldDecisions(f.ctx, "r1")
		if err != nil || run.Status != pipeline.RunDone || len(got) != 1 || got[0].ID != "d1" || got[0].CallID != "c9" {
			t.Fatalf("EndStep ending the run = %+v, %+v, %v; want d1 held for c9", run, got, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("EndStep says %+v are held, HeldDecisions %+v", got, want)
		}
	}},
	{"apply_decision_refuses_what_it_cannot_apply", func(t *testing.T, f *fixture) {
		f.parked(t, "r1", pipeline.ResumeReplay, at(2), "c1")
		f.noEventsFrom(t, "r1", func() {
			for _, d := range []store.Decision{
				{CallID: "c1", Action: store.ActionResume},
				{ID: "d1", Action: store.ActionResume},
				{ID: "d1", CallID: "c1", Action: "approve"},
				{ID: "d1", CallID: "c1", Action: store.ActionResume, Payload: json.RawMessage(`{`)},
			} {
				_, err := f.st.ApplyDecision(f.ctx, "r1", d, at(60), at(3))
				wantErr(t, err, store.ErrInvalid)
			}
		})
		_, err := f.st.ApplyDecision(f.ctx, "r{1}", resume("d1", "c1"), at(60), at(3))
		wantErr(t, err, store.ErrInvalid)
	}},
}

func resume(id, callID string) store.Decision {
	return store.Decision{ID: id, CallID: callID, Action: store.ActionResume, DecidedBy: "alice", Reason: "looks fine"}
}

// decide applies d at now, holding it for a minute, and fails t on an error.
func (f *fixture) decide(t *testing.T, runID string, d store.Decision, now time.Time) store.DecisionResult {
	t.Helper()
	res, err := f.st.ApplyDecision(f.ctx, runID, d, now.Add(time.Minute), now)
	if err != nil {
		t.Fatalf("ApplyDecision(%s): %v", d.ID, err)
	}
	return res
}

// noCallChange runs do and checks the call's record did not change.
func (f *fixture) noCallChange(t *testing.T, runID, callID string, do func()) {
	t.Helper()
	before, err := f.st.GetCall(f.ctx, runID, callID)
	if err != nil {
		t.Fatal(err)
	}
	do()
	after, _ := f.st.GetCall(f.ctx, runID, callID)
	b, _ := json.Marshal(before)
	a, _ := json.Marshal(after)
	if string(a) != string(b) {
		t.Fatalf("the call changed:\n%s\n%s", b, a)
	}
}

// wantRejected checks the run's last event rejects decisionID for reason.
func wantRejected(t *testing.T, f *fixture, runID, callID, decisionID, reason string) {
	t.Helper()
	evs := f.events(t, runID)
	last := evs[len(evs)-1]
	if last.Type != pipeline.EventDecisionRejected || last.CallID != callID || last.Step != 0 {
		t.Fatalf("last event = %+v", last)
	}
	want, _ := json.Marshal(map[string]string{"decision_id": decisionID, "reason": reason})
	wantJSON(t, last.Data, string(want))
}

func wantHeld(t *testing.T, f *fixture, runID string, want ...store.HeldDecision) {
	t.Helper()
	got, err := f.st.HeldDecisions(f.ctx, runID)
	if err != nil {
		t.Fatalf("HeldDecisions: %v", err)
	}
	if len(got) == 0 && len(want) == 0 {
		return
	}
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	if len(got) != len(want) || string(g) != string(w) {
		t.Fatalf("held = %s, want %s", g, w)
	}
}
