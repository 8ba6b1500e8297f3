package store_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/store"
)

var gateCases = []contractCase{
	{"a_new_call_keeps_no_field_at_its_default", func(t *testing.T, f *fixture) {
		f.claimed(t, "r1")
		c := suspendedCommit(pipeline.ResumeReplay, "c1", "c2")
		c.Calls[1].Parking.Deadline = time.Time{} // parked with no deadline
		if _, _, err := f.st.CommitStep(f.ctx, "r1", 0, "w1", c, at(2)); err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{"c1", "c2"} {
			h, err := f.rdb.HGetAll(f.ctx, f.prefix+":{r1}:call:"+id).Result()
			if err != nil {
				t.Fatal(err)
			}
			for _, field := range []string{"attempts", "lease_owner", "lease_until", "dec_timeout", "dec_id", "orig_args", "result"} {
				if v, ok := h[field]; ok {
					t.Errorf("call %s keeps %s = %q", id, field, v)
				}
			}
			if _, ok := h["deadline"]; ok != (id == "c1") {
				t.Errorf("call %s: deadline %q, want one only for c1", id, h["deadline"])
			}
		}
		// They read as the defaults they left out.
		c1, c2 := f.call(t, "r1", "c1"), f.call(t, "r1", "c2")
		if c1.Attempts != 0 || c1.LeaseOwner != "" || !c1.LeaseUntil.IsZero() || c1.Decision != nil || c1.Parking == nil ||
			!c1.Parking.Deadline.Equal(at(600)) || c2.Parking == nil || !c2.Parking.Deadline.IsZero() {
			t.Fatalf("calls read back as %+v and %+v", c1, c2)
		}
	}},
	{"a_waiting_run_keeps_its_event_stream_exactly_sized_and_whole", func(t *testing.T, f *fixture) {
		f.claimed(t, "r1")
		if _, _, err := f.st.CommitStep(f.ctx, "r1", 0, "w1", suspendedCommit(pipeline.ResumeReplay, "c1"), at(2)); err != nil {
			t.Fatal(err)
		}
		stream := f.prefix + ":{r1}:events"
		before, err := f.st.Events(f.ctx, "r1", "", 100)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.st.SetWaiting(f.ctx, "r1", 0, false, at(3)); err != nil {
			t.Fatal(err)
		}
		after, err := f.st.Events(f.ctx, "r1", "", 100)
		if err != nil || len(after) != len(before)+1 || after[len(before)].Type != pipeline.EventRunFinished {
			t.Fatalf("events after parking: %d (%v), want the %d before and run.finished", len(after), err, len(before))
		}
		for i, e := range before {
			if after[i].ID != e.ID || after[i].Type != e.Type {
				t.Fatalf("event %d is %s %s after parking, was %s %s", i, after[i].ID, after[i].Type, e.ID, e.Type)
			}
		}
		// A stream node is given 4 KB at once (stream-node-max-bytes); the
		// parked run's stream holds about 1.5 KB of events. miniredis
		// knows no MEMORY USAGE.
		if used, err := f.rdb.MemoryUsage(f.ctx, stream, 0).Result(); err == nil && used >= 3000 {
			t.Errorf("the waiting run's event stream takes %d bytes, want it compacted below 3000", used)
		}
		if _, err := f.st.ApplyDecision(f.ctx, "r1", resume("d1", "c1"), at(60), at(4)); err != nil {
			t.Fatal(err)
		}
		resumed, err := f.st.Events(f.ctx, "r1", after[len(after)-1].ID, 100)
		if err != nil || len(resumed) == 0 {
			t.Fatalf("no event after the last one once decided (%v): the stream's last id was lost", err)
		}
	}},
	{"a_parking_keeps_the_time_its_call_was_decided_to_park", func(t *testing.T, f *fixture) {
		f.claimed(t, "r1")
		// ToolGate decided at 1.5s, with a deadline 10m from then; the
		// commit comes at 2s. A parked-at after the commit becomes the commit.
		c := suspendedCommit(pipeline.ResumeReplay, "c1", "c2")
		c.Calls[0].Parking.ParkedAt, c.Calls[0].Parking.Deadline = at(1).Add(500*time.Millisecond), at(601).Add(500*time.Millisecond)
		c.Calls[1].Parking.ParkedAt = at(3)
		if _, _, err := f.st.CommitStep(f.ctx, "r1", 0, "w1", c, at(2)); err != nil {
			t.Fatal(err)
		}
		calls := f.stepCalls(t, "r1", 0)
		if p := calls[0].Parking; !p.ParkedAt.Equal(at(1).Add(500*time.Millisecond)) || p.Deadline.Sub(p.ParkedAt) != 10*time.Minute {
			t.Fatalf("c1 parked at %v, deadline %v: want ToolGate's time, and the deadline 10m after it", p.ParkedAt, p.Deadline)
		}
		if p := calls[1].Parking; !p.ParkedAt.Equal(at(2)) {
			t.Fatalf("c2 parked at %v, want the commit's time", p.ParkedAt)
		}
	}},
	{"commit_records_the_state_toolgate_decided_per_call", func(t *testing.T, f *fixture) {
		f.claimed(t, "r1")
		c := commitOf("c1", "c2", "c3", "c4")
		c.Calls[0].Gate = pipeline.GateAllow
		c.Calls[1].Gate, c.Calls[1].Status = pipeline.GateSuspend, pipeline.CallSuspended
		c.Calls[1].Parking = parking(pipeline.ResumePassDecisionToTool)
		c.Calls[2].Gate, c.Calls[2].Status = pipeline.GateSetResult, pipeline.CallSucceeded
		c.Calls[2].Result = json.RawMessage(`{"cached":true}`)
		c.Calls[3].Gate, c.Calls[3].Status, c.Calls[3].Error = pipeline.GateBlock, pipeline.CallFailed, "denied by policy"
		_, calls, err := f.st.CommitStep(f.ctx, "r1", 0, "w1", c, at(2))
		if err != nil {
			t.Fatalf("CommitStep: %v", err)
		}
		wantStatus := []pipeline.ToolCallStatus{pipeline.CallNew, pipeline.CallSuspended, pipeline.CallSucceeded, pipeline.CallFailed}
		for i, call := range calls {
			if call.Status != wantStatus[i] || call.Gate != c.Calls[i].Gate || call.Decision != nil || call.OrigArgs != nil {
				t.Fatalf("call %d = %+v", i, call)
			}
			if (call.Parking != nil) != (i == 1) {
				t.Fatalf("call %d parking = %+v", i, call.Parking)
			}
		}
		hash, _ := pipeline.ArgsHash(c.Calls[1].Arguments)
		want := pipeline.Parking{Ticket: "tk", Reason: "needs approval", ArgsHash: hash,
			ResumeMode: pipeline.ResumePassDecisionToTool, Deadline: at(600), OnTimeout: "cancel", ParkedAt: at(2)}
		if *calls[1].Parking != want {
			t.Fatalf("parking = %+v, want %+v", *calls[1].Parking, want)
		}
		wantJSON(t, calls[2].Result, `{"cached":true}`)
		if calls[3].Error != "denied by policy" {
			t.Fatalf("blocked call = %+v", calls[3])
		}
		stored, err := f.st.GetCall(f.ctx, "r1", "c2")
		if err != nil || stored.Parking == nil || *stored.Parking != want || stored.Gate != pipeline.GateSuspend {
			t.Fatalf("GetCall = %+v, %v", stored, err)
		}

		evs := f.events(t, "r1")[3:]
		wantTypes(t, typesOf(evs), pipeline.EventAssistantMessage,
			pipeline.EventToolCallCreated,
			pipeline.EventToolCallCreated, pipeline.EventToolCallParked,
			pipeline.EventToolCallCreated, pipeline.EventToolCallFinished,
			pipeline.EventToolCallCreated, pipeline.EventToolCallFinished)
		wantJSON(t, evs[1].Data, `{"tool":"echo","queue":"default","index":0,"arguments":{"n":0},"status":"new","gate":"allow"}`)
		wantJSON(t, evs[2].Data, `{"tool":"echo","queue":"default","index":1,"arguments":{"n":1},"status":"suspended","gate":"suspend"}`)
		parkJSON, _ := json.Marshal(want)
		wantJSON(t, evs[3].Data, string(parkJSON))
		wantJSON(t, evs[5].Data, `{"status":"succeeded","result":{"cached":true}}`)
		wantJSON(t, evs[7].Data, `{"status":"failed","error":"denied by policy"}`)
		for i, id := range []string{"", "c1", "c2", "c2", "c3", "c3", "c4", "c4"} {
			if evs[i].CallID != id || evs[i].Step != 0 || !evs[i].At.Equal(at(2)) {
				t.Fatalf("event %d = %+v", i, evs[i])
			}
		}
		wantPending(t, f, store.PendingFilter{}, "r1/c2")
	}},
	{"commit_keeps_a_given_args_hash_and_defaults_the_resume_mode", func(t *testing.T, f *fixture) {
		f.claimed(t, "r1")
		c := suspendedCommit("", "c1")
		c.Calls[0].Parking.ArgsHash = "given"
		_, calls, err := f.st.CommitStep(f.ctx, "r1", 0, "w1", c, at(2))
		if err != nil {
			t.Fatal(err)
		}
		if p := calls[0].Parking; p.ArgsHash != "given" || p.ResumeMode != pipeline.ResumeReplay {
			t.Fatalf("parking = %+v", p)
		}
	}},
	{"commit_refuses_calls_in_states_toolgate_cannot_leave", func(t *testing.T, f *fixture) {
		f.claimed(t, "r1")
		for name, change := range map[string]func(c *pipeline.ToolCall){
			"suspended without parking": func(c *pipeline.ToolCall) { c.Status = pipeline.CallSuspended },
			"parking on a new call":     func(c *pipeline.ToolCall) { c.Parking = parking(pipeline.ResumeReplay) },
			"running":                   func(c *pipeline.ToolCall) { c.Status = pipeline.CallRunning },
			"resuming":                  func(c *pipeline.ToolCall) { c.Status = pipeline.CallResuming },
			"a new call with a result":  func(c *pipeline.ToolCall) { c.Result = json.RawMessage(`1`) },
			"an unknown gate":           func(c *pipeline.ToolCall) { c.Gate = "maybe" },
			"a result that is not JSON": func(c *pipeline.ToolCall) { c.Status, c.Result = pipeline.CallSucceeded, json.RawMessage(`{`) },
			"a parking without ticket": func(c *pipeline.ToolCall) {
				c.Status, c.Parking = pipeline.CallSuspended, parking(pipeline.ResumeReplay)
				c.Parking.Ticket = ""
			},
			"an unknown resume mode": func(c *pipeline.ToolCall) {
				c.Status, c.Parking = pipeline.CallSuspended, parking("later")
			},
			"an unknown on_timeout": func(c *pipeline.ToolCall) {
				c.Status, c.Parking = pipeline.CallSuspended, parking(pipeline.ResumeReplay)
				c.Parking.OnTimeout = "shrug"
			},
		} {
			c := commitOf("c1", "c2")
			change(&c.Calls[1])
			f.noEventsFrom(t, "r1", func() {
				_, _, err := f.st.CommitStep(f.ctx, "r1", 0, "w1", c, at(2))
				if err == nil {
					t.Fatalf("%s: committed", name)
				}
				wantErr(t, err, store.ErrInvalid)
			})
		}
		if run := f.run(t, "r1"); run.StepState != pipeline.StepInferring {
			t.Fatalf("a refused commit changed the run: %+v", run)
		}
	}},
	{"set_waiting_in_sequential_mode_counts_the_calls_up_to_the_parked_one", func(t *testing.T, f *fixture) {
		f.claimed(t, "r1")
		c := suspendedCommit(pipeline.ResumeReplay, "c1", "c2")
		c.Calls[1].Status, c.Calls[1].Parking = pipeline.CallNew, nil // waits behind c1
		if _, _, err := f.st.CommitStep(f.ctx, "r1", 0, "w1", c, at(2)); err != nil {
			t.Fatal(err)
		}
		_, err := f.st.SetWaiting(f.ctx, "r1", 0, false, at(3))
		wantErr(t, err, store.ErrStale)
		run, err := f.st.SetWaiting(f.ctx, "r1", 0, true, at(3))
		if err != nil || run.Status != pipeline.RunWaiting {
			t.Fatalf("sequential SetWaiting = %+v, %v", run, err)
		}
	}},
	{"set_waiting_parks_the_run_once_nothing_runs", func(t *testing.T, f *fixture) {
		f.claimed(t, "r1")
		c := suspendedCommit(pipeline.ResumeReplay, "c1", "c2")
		c.Calls[1].Status, c.Calls[1].Parking = pipeline.CallNew, nil
		if _, _, err := f.st.CommitStep(f.ctx, "r1", 0, "w1", c, at(2)); err != nil {
			t.Fatal(err)
		}
		f.noEventsFrom(t, "r1", func() {
			run, err := f.st.SetWaiting(f.ctx, "r1", 0, false, at(3))
			wantErr(t, err, store.ErrStale)
			if !strings.Contains(err.Error(), "c2") {
				t.Fatalf("the error does not name the new call: %v", err)
			}
			if run.Status != pipeline.RunRunning || run.StepState != pipeline.StepTools {
				t.Fatalf("the refusal returned %+v, want the current run", run)
			}
		})
		f.done(t, "r1", "c2")
		run, err := f.st.SetWaiting(f.ctx, "r1", 0, false, at(5))
		if err != nil {
			t.Fatalf("SetWaiting: %v", err)
		}
		if run.Status != pipeline.RunWaiting || run.Termination == nil ||
			*run.Termination != (pipeline.Termination{Reason: pipeline.ReasonSuspended}) || !run.UpdatedAt.Equal(at(5)) {
			t.Fatalf("run = %+v", run)
		}
		evs := f.events(t, "r1")
		last := evs[len(evs)-1]
		if last.Type != pipeline.EventRunFinished || last.Step != 0 || !last.At.Equal(at(5)) {
			t.Fatalf("last event = %+v", last)
		}
		wantJSON(t, last.Data, `{"reason":"suspended"}`)
		f.noEventsFrom(t, "r1", func() {
			run, err := f.st.SetWaiting(f.ctx, "r1", 0, false, at(6))
			wantErr(t, err, store.ErrStale)
			if run.Status != pipeline.RunWaiting {
				t.Fatalf("the refusal returned %+v", run)
			}
			// A waiting run has no step to end or claim.
			_, _, err = f.st.EndStep(f.ctx, "r1", 0, store.StepEnd{}, at(6))
			wantErr(t, err, store.ErrStale)
		})
	}},
	{"set_waiting_refuses_a_step_with_nothing_suspended_or_another_step", func(t *testing.T, f *fixture) {
		f.claimed(t, "r1")
		f.noEventsFrom(t, "r1", func() {
			_, err := f.st.SetWaiting(f.ctx, "r1", 0, false, at(2)) // not committed yet
			wantErr(t, err, store.ErrStale)
		})
		f.commit(t, "r1", 0, "w1", "c1")
		f.done(t, "r1", "c1")
		f.noEventsFrom(t, "r1", func() {
			_, err := f.st.SetWaiting(f.ctx, "r1", 0, false, at(5))
			wantErr(t, err, store.ErrStale)
			if !strings.Contains(err.Error(), "suspended") {
				t.Fatalf("err = %v", err)
			}
			_, err = f.st.SetWaiting(f.ctx, "r1", 1, false, at(5))
			wantErr(t, err, store.ErrStale)
		})
		_, err := f.st.SetWaiting(f.ctx, "nope", 0, false, at(5))
		wantErr(t, err, store.ErrNotFound)
		if _, err := f.st.FinishRun(f.ctx, "r1", pipeline.Termination{Reason: pipeline.ReasonError}, at(6)); err != nil {
			t.Fatal(err)
		}
		f.noEventsFrom(t, "r1", func() {
			_, err := f.st.SetWaiting(f.ctx, "r1", 0, false, at(7))
			wantErr(t, err, store.ErrStale)
		})
	}},
	{"finish_call_parks_a_call_whose_tool_returned_pending", func(t *testing.T, f *fixture) {
		_, calls := f.committed(t, "r1", "c1")
		if _, err := f.st.ClaimCall(f.ctx, "r1", "c1", lease("t1", at(60)), at(3)); err != nil {
			t.Fatal(err)
		}
		f.noEventsFrom(t, "r1", func() {
			for _, o := range []store.CallOutcome{
				{Status: pipeline.CallSuspended},
				{Status: pipeline.CallSucceeded, Parking: parking(pipeline.ResumeReplay)},
				{Status: pipeline.CallSuspended, Parking: &pipeline.Parking{}},
			} {
				_, err := f.st.FinishCall(f.ctx, "r1", "c1", "t1", o, at(4))
				wantErr(t, err, store.ErrInvalid)
			}
		})
		fin, err := f.st.FinishCall(f.ctx, "r1", "c1", "t1",
			store.CallOutcome{Status: pipeline.CallSuspended, Parking: parking(pipeline.ResumeUseDecisionAsResult)}, at(4))
		call := fin.Call
		if err != nil {
			t.Fatalf("FinishCall: %v", err)
		}
		hash, _ := pipeline.ArgsHash(calls[0].Arguments)
		want := pipeline.Parking{Ticket: "tk", Reason: "needs approval", ArgsHash: hash,
			ResumeMode: pipeline.ResumeUseDecisionAsResult, Deadline: at(600), OnTimeout: "cancel", ParkedAt: at(4)}
		if call.Status != pipeline.CallSuspended || call.Parking == nil || *call.Parking != want || call.LeaseOwner != "" {
			t.Fatalf("call = %+v (parking %+v)", call, call.Parking)
		}
		evs := f.events(t, "r1")
		evs = evs[len(evs)-2:]
		wantTypes(t, typesOf(evs), pipeline.EventToolCallFinished, pipeline.EventToolCallParked)
		wantJSON(t, evs[0].Data, `{"status":"suspended"}`)
		parkJSON, _ := json.Marshal(want)
		wantJSON(t, evs[1].Data, string(parkJSON))
		if evs[1].CallID != "c1" || evs[1].Step != 0 {
			t.Fatalf("tool_call.suspended = %+v", evs[1])
		}
		wantPending(t, f, store.PendingFilter{}, "r1/c1")
		if _, err := f.st.SetWaiting(f.ctx, "r1", 0, false, at(5)); err != nil {
			t.Fatalf("SetWaiting: %v", err)
		}
	}},
}

// parking is what ToolGate parks a call with; the store completes it.
func parking(mode pipeline.ResumeMode) *pipeline.Parking {
	return &pipeline.Parking{Ticket: "tk", Reason: "needs approval", ResumeMode: mode, Deadline: at(600), OnTimeout: "cancel"}
}

// suspendedCommit is commitOf(callIDs...) with every call suspended in mode,
// each with ticket "tk-<id>".
func suspendedCommit(mode pipeline.ResumeMode, callIDs ...string) store.StepCommit {
	c := commitOf(callIDs...)
	for i := range c.Calls {
		c.Calls[i].Status, c.Calls[i].Gate = pipeline.CallSuspended, pipeline.GateSuspend
		c.Calls[i].Parking = parking(mode)
		c.Calls[i].Parking.Ticket = "tk-" + c.Calls[i].ID
	}
	return c
}

// parked creates run id, claims step 0, commits callIDs all suspended in
// mode at now and sets the run waiting (at now too).
func (f *fixture) parked(t *testing.T, id string, mode pipeline.ResumeMode, now time.Time, callIDs ...string) pipeline.Run {
	t.Helper()
	f.claimed(t, id)
	if _, _, err := f.st.CommitStep(f.ctx, id, 0, "w1", suspendedCommit(mode, callIDs...), now); err != nil {
		t.Fatalf("CommitStep: %v", err)
	}
	run, err := f.st.SetWaiting(f.ctx, id, 0, false, now)
	if err != nil {
		t.Fatalf("SetWaiting: %v", err)
	}
	return run
}

// wantPending checks ListPending(pf) gives exactly "run/call" entries, in
// order.
func wantPending(t *testing.T, f *fixture, pf store.PendingFilter, want ...string) {
	t.Helper()
	got, err := f.st.ListPending(f.ctx, pf)
	if err != nil {
		t.Fatalf("ListPending(%+v): %v", pf, err)
	}
	var ids []string
	for _, p := range got {
		ids = append(ids, p.Call.RunID+"/"+p.Call.ID)
	}
	if strings.Join(ids, ",") != strings.Join(want, ",") {
		t.Fatalf("ListPending(%+v) = %v, want %v", pf, ids, want)
	}
}
