package store_test

import (
	"encoding/json"
	"testing"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/store"
)

var callCases = []contractCase{
	{"claim_call_starts_a_new_call", func(t *testing.T, f *fixture) {
		f.committed(t, "r1", "c1")
		call, err := f.st.ClaimCall(f.ctx, "r1", "c1", lease("t1", at(60)), at(3))
		if err != nil {
			t.Fatalf("ClaimCall: %v", err)
		}
		if call.Status != pipeline.CallRunning || call.Attempts != 1 || call.LeaseOwner != "t1" ||
			!call.LeaseUntil.Equal(at(60)) || !call.UpdatedAt.Equal(at(3)) {
			t.Fatalf("call = %+v", call)
		}
		evs := f.events(t, "r1")
		last := evs[len(evs)-1]
		if last.Type != pipeline.EventToolCallStarted || last.CallID != "c1" || last.Step != 0 {
			t.Fatalf("last event = %+v", last)
		}
		wantJSON(t, last.Data, `{"attempt":1}`)
	}},
	{"claim_of_a_running_call_is_refused_while_its_lease_holds", func(t *testing.T, f *fixture) {
		f.committed(t, "r1", "c1")
		if _, err := f.st.ClaimCall(f.ctx, "r1", "c1", lease("t1", at(60)), at(3)); err != nil {
			t.Fatal(err)
		}
		f.noEventsFrom(t, "r1", func() {
			call, err := f.st.ClaimCall(f.ctx, "r1", "c1", lease("t2", at(90)), at(59))
			wantErr(t, err, store.ErrLeaseHeld)
			if call.LeaseOwner != "t1" || call.Attempts != 1 {
				t.Fatalf("the refusal returned %+v, want the current call", call)
			}
		})
	}},
	{"claim_of_a_call_with_an_expired_lease_takes_it_over", func(t *testing.T, f *fixture) {
		f.committed(t, "r1", "c1")
		if _, err := f.st.ClaimCall(f.ctx, "r1", "c1", lease("t1", at(60)), at(3)); err != nil {
			t.Fatal(err)
		}
		call, err := f.st.ClaimCall(f.ctx, "r1", "c1", lease("t2", at(120)), at(60))
		if err != nil || call.LeaseOwner != "t2" || call.Attempts != 2 {
			t.Fatalf("takeover = %+v, %v", call, err)
		}
		evs := f.events(t, "r1")
		wantTypes(t, typesOf(evs[len(evs)-2:]), pipeline.EventToolCallStarted, pipeline.EventToolCallRetried)
		wantJSON(t, evs[len(evs)-1].Data, `{"attempt":2}`)
		f.noEventsFrom(t, "r1", func() {
			wantErr(t, f.st.RenewCallLease(f.ctx, "r1", "c1", lease("t1", at(200))), store.ErrLeaseLost)
			_, err := f.st.FinishCall(f.ctx, "r1", "c1", "t1", store.CallOutcome{Status: pipeline.CallSucceeded}, at(61))
			wantErr(t, err, store.ErrLeaseLost)
		})
		if _, err := f.st.FinishCall(f.ctx, "r1", "c1", "t2", store.CallOutcome{Status: pipeline.CallFailed, Error: "boom"}, at(62)); err != nil {
			t.Fatalf("the new holder's FinishCall: %v", err)
		}
	}},
	{"claim_of_a_finished_or_suspended_call_is_stale", func(t *testing.T, f *fixture) {
		f.committed(t, "r1", "c1", "c2")
		f.done(t, "r1", "c1")
		if _, err := f.st.ClaimCall(f.ctx, "r1", "c2", lease("t1", at(60)), at(3)); err != nil {
			t.Fatal(err)
		}
		if _, err := f.st.FinishCall(f.ctx, "r1", "c2", "t1", store.CallOutcome{Status: pipeline.CallSuspended, Parking: parking(pipeline.ResumeReplay)}, at(4)); err != nil {
			t.Fatal(err)
		}
		for id, want := range map[string]pipeline.ToolCallStatus{"c1": pipeline.CallSucceeded, "c2": pipeline.CallSuspended} {
			f.noEventsFrom(t, "r1", func() {
				call, err := f.st.ClaimCall(f.ctx, "r1", id, lease("t2", at(190)), at(100))
				wantErr(t, err, store.ErrStale)
				if call.Status != want {
					t.Fatalf("the refusal returned %+v, want the current call", call)
				}
			})
		}
	}},
	{"claim_of_an_unknown_call_is_not_found", func(t *testing.T, f *fixture) {
		f.committed(t, "r1", "c1")
		_, err := f.st.ClaimCall(f.ctx, "r1", "c9", lease("t1", at(60)), at(3))
		wantErr(t, err, store.ErrNotFound)
		_, err = f.st.ClaimCall(f.ctx, "r9", "c1", lease("t1", at(60)), at(3))
		wantErr(t, err, store.ErrNotFound)
		wantErr(t, f.st.RenewCallLease(f.ctx, "r1", "c9", lease("t1", at(60))), store.ErrNotFound)
		_, err = f.st.FinishCall(f.ctx, "r1", "c9", "t1", store.CallOutcome{Status: pipeline.CallSucceeded}, at(3))
		wantErr(t, err, store.ErrNotFound)
	}},
	{"claim_of_a_call_of_a_done_run_is_stale", func(t *testing.T, f *fixture) {
		f.committed(t, "r1", "c1")
		if _, err := f.st.FinishRun(f.ctx, "r1", pipeline.Termination{Reason: pipeline.ReasonCancelled}, at(3)); err != nil {
			t.Fatal(err)
		}
		f.noEventsFrom(t, "r1", func() {
			call, err := f.st.ClaimCall(f.ctx, "r1", "c1", lease("t1", at(60)), at(4))
			wantErr(t, err, store.ErrStale)
			if call.Status != pipeline.CallNew {
				t.Fatalf("the refusal returned %+v", call)
			}
		})
	}},
	{"renew_moves_the_lease_of_its_holder", func(t *testing.T, f *fixture) {
		f.committed(t, "r1", "c1")
		if _, err := f.st.ClaimCall(f.ctx, "r1", "c1", lease("t1", at(60)), at(3)); err != nil {
			t.Fatal(err)
		}
		f.noEventsFrom(t, "r1", func() {
			if err := f.st.RenewCallLease(f.ctx, "r1", "c1", lease("t1", at(120))); err != nil {
				t.Fatalf("RenewCallLease: %v", err)
			}
		})
		call, err := f.st.GetCall(f.ctx, "r1", "c1")
		if err != nil || !call.LeaseUntil.Equal(at(120)) {
			t.Fatalf("GetCall = %+v, %v", call, err)
		}
		_, err = f.st.ClaimCall(f.ctx, "r1", "c1", lease("t2", at(200)), at(90))
		wantErr(t, err, store.ErrLeaseHeld)
		wantErr(t, f.st.RenewCallLease(f.ctx, "r1", "c1", lease("t2", at(200))), store.ErrLeaseLost)
	}},
	{"finish_call_records_the_outcome", func(t *testing.T, f *fixture) {
		f.committed(t, "r1", "c1", "c2")
		call := f.done(t, "r1", "c1")
		if call.Status != pipeline.CallSucceeded || call.LeaseOwner != "" || !call.LeaseUntil.IsZero() ||
			!call.UpdatedAt.Equal(at(4)) || call.Error != "" {
			t.Fatalf("call = %+v", call)
		}
		wantJSON(t, call.Result, `{"ok":true}`)
		evs := f.events(t, "r1")
		last := evs[len(evs)-1]
		if last.Type != pipeline.EventToolCallFinished || last.CallID != "c1" {
			t.Fatalf("last event = %+v", last)
		}
		wantJSON(t, last.Data, `{"status":"succeeded","result":{"ok":true}}`)

		if _, err := f.st.ClaimCall(f.ctx, "r1", "c2", lease("t1", at(60)), at(3)); err != nil {
			t.Fatal(err)
		}
		fin, err := f.st.FinishCall(f.ctx, "r1", "c2", "t1", store.CallOutcome{Status: pipeline.CallFailed, Error: "boom"}, at(5))
		call = fin.Call
		if err != nil || call.Status != pipeline.CallFailed || call.Error != "boom" || call.Result != nil {
			t.Fatalf("FinishCall = %+v, %v", call, err)
		}
		evs = f.events(t, "r1")
		wantJSON(t, evs[len(evs)-1].Data, `{"status":"failed","error":"boom"}`)
	}},
	{"finishing_a_call_twice_is_stale", func(t *testing.T, f *fixture) {
		f.committed(t, "r1", "c1")
		f.done(t, "r1", "c1")
		f.noEventsFrom(t, "r1", func() {
			_, err := f.st.FinishCall(f.ctx, "r1", "c1", "t1", store.CallOutcome{Status: pipeline.CallFailed}, at(9))
			wantErr(t, err, store.ErrStale)
		})
	}},
	{"finishing_a_call_nobody_claimed_is_stale", func(t *testing.T, f *fixture) {
		f.committed(t, "r1", "c1")
		f.noEventsFrom(t, "r1", func() {
			_, err := f.st.FinishCall(f.ctx, "r1", "c1", "t1", store.CallOutcome{Status: pipeline.CallSucceeded}, at(9))
			wantErr(t, err, store.ErrStale)
		})
	}},
	{"finish_call_refuses_an_outcome_a_worker_may_not_set", func(t *testing.T, f *fixture) {
		f.committed(t, "r1", "c1")
		if _, err := f.st.ClaimCall(f.ctx, "r1", "c1", lease("t1", at(60)), at(3)); err != nil {
			t.Fatal(err)
		}
		for _, o := range []store.CallOutcome{
			{Status: pipeline.CallCancelled},
			{Status: pipeline.CallNew},
			{Status: "weird"},
			{Status: pipeline.CallSucceeded, Result: json.RawMessage(`{not json`)},
		} {
			_, err := f.st.FinishCall(f.ctx, "r1", "c1", "t1", o, at(4))
			wantErr(t, err, store.ErrInvalid)
		}
		if call, _ := f.st.GetCall(f.ctx, "r1", "c1"); call.Status != pipeline.CallRunning {
			t.Fatalf("a refused outcome changed the call: %+v", call)
		}
	}},
}
