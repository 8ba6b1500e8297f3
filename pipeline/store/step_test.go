package store_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/store"
)

var stepCases = []contractCase{
	{"first_claim_starts_the_run_and_the_step", func(t *testing.T, f *fixture) {
		run := f.claimed(t, "r1")
		if run.Status != pipeline.RunRunning || run.StepState != pipeline.StepInferring || run.Attempts != 1 ||
			run.LeaseOwner != "w1" || !run.LeaseUntil.Equal(at(30)) || !run.UpdatedAt.Equal(at(1)) {
			t.Fatalf("run = %+v", run)
		}
		evs := f.events(t, "r1")
		wantTypes(t, typesOf(evs), pipeline.EventRunCreated, pipeline.EventRunStarted, pipeline.EventStepStarted)
		wantJSON(t, evs[2].Data, `{"attempt":1}`)
		if !evs[2].At.Equal(at(1)) || evs[2].Step != 0 {
			t.Fatalf("step.started = %+v", evs[2])
		}
	}},
	{"claim_of_a_held_step_is_refused", func(t *testing.T, f *fixture) {
		f.claimed(t, "r1")
		for _, owner := range []string{"w2", "w1"} {
			f.noEventsFrom(t, "r1", func() {
				run, err := f.st.ClaimStep(f.ctx, "r1", 0, lease(owner, at(60)), at(29))
				wantErr(t, err, store.ErrLeaseHeld)
				if run.LeaseOwner != "w1" || run.Attempts != 1 {
					t.Fatalf("the refusal returned %+v, want the current run", run)
				}
			})
		}
	}},
	{"claim_after_the_lease_expired_takes_the_step_over", func(t *testing.T, f *fixture) {
		f.claimed(t, "r1")
		run, err := f.st.ClaimStep(f.ctx, "r1", 0, lease("w2", at(90)), at(30))
		if err != nil {
			t.Fatalf("takeover: %v", err)
		}
		if run.LeaseOwner != "w2" || run.Attempts != 2 || run.Status != pipeline.RunRunning {
			t.Fatalf("run = %+v", run)
		}
		evs := f.events(t, "r1")
		wantTypes(t, typesOf(evs), pipeline.EventRunCreated, pipeline.EventRunStarted,
			pipeline.EventStepStarted, pipeline.EventStepRetried)
		wantJSON(t, evs[3].Data, `{"attempt":2}`)
		f.noEventsFrom(t, "r1", func() {
			_, _, err := f.st.CommitStep(f.ctx, "r1", 0, "w1", commitOf("c1"), at(31))
			wantErr(t, err, store.ErrLeaseLost)
		})
		f.commit(t, "r1", 0, "w2", "c1")
	}},
	{"renew_moves_the_step_lease_of_its_holder_only", func(t *testing.T, f *fixture) {
		f.claimed(t, "r1")
		if err := f.st.RenewStepLease(f.ctx, "r1", 0, lease("w1", at(120))); err != nil {
			t.Fatalf("RenewStepLease: %v", err)
		}
		if run := f.run(t, "r1"); !run.LeaseUntil.Equal(at(120)) || run.LeaseOwner != "w1" {
			t.Fatalf("run = %+v", run)
		}
		wantErr(t, f.st.RenewStepLease(f.ctx, "r1", 0, lease("w2", at(200))), store.ErrLeaseLost)
		wantErr(t, f.st.RenewStepLease(f.ctx, "r1", 1, lease("w1", at(200))), store.ErrLeaseLost)
		wantErr(t, f.st.RenewStepLease(f.ctx, "r9", 0, lease("w1", at(200))), store.ErrNotFound)
		f.commit(t, "r1", 0, "w1", "c1")
		wantErr(t, f.st.RenewStepLease(f.ctx, "r1", 0, lease("w1", at(200))), store.ErrLeaseLost)
	}},
	{"deltas_are_appended_only_by_the_step_holder", func(t *testing.T, f *fixture) {
		f.claimed(t, "r1")
		if err := f.st.AppendDelta(f.ctx, "r1", 0, "w1", "Hel", at(2)); err != nil {
			t.Fatalf("AppendDelta: %v", err)
		}
		f.noEventsFrom(t, "r1", func() {
			wantErr(t, f.st.AppendDelta(f.ctx, "r1", 0, "w2", "lo", at(3)), store.ErrLeaseLost)
			wantErr(t, f.st.AppendDelta(f.ctx, "r1", 1, "w1", "lo", at(3)), store.ErrLeaseLost)
		})
		evs := f.events(t, "r1")
		last := evs[len(evs)-1]
		if last.Type != pipeline.EventTextDelta {
			t.Fatalf("last event %s", last.Type)
		}
		wantJSON(t, last.Data, `{"text":"Hel"}`)
	}},
	{"claim_of_another_step_is_stale", func(t *testing.T, f *fixture) {
		f.created(t, "r1")
		f.noEventsFrom(t, "r1", func() {
			run, err := f.st.ClaimStep(f.ctx, "r1", 1, lease("w1", at(30)), at(1))
			wantErr(t, err, store.ErrStale)
			if run.ID != "r1" || run.Step != 0 || run.Status != pipeline.RunCreated {
				t.Fatalf("the refusal returned %+v, want the current run", run)
			}
		})
	}},
	{"claim_of_a_committed_step_is_stale", func(t *testing.T, f *fixture) {
		f.committed(t, "r1", "c1")
		f.noEventsFrom(t, "r1", func() {
			run, err := f.st.ClaimStep(f.ctx, "r1", 0, lease("w2", at(90)), at(50))
			wantErr(t, err, store.ErrStale)
			if run.StepState != pipeline.StepTools {
				t.Fatalf("the refusal returned %+v", run)
			}
		})
	}},
	{"claim_with_an_expired_lease_is_refused", func(t *testing.T, f *fixture) {
		f.committed(t, "r1", "c1")
		f.noEventsFrom(t, "r1", func() {
			_, err := f.st.ClaimStep(f.ctx, "r1", 0, lease("w1", at(5)), at(5))
			wantErr(t, err, store.ErrInvalid)
			_, err = f.st.ClaimCall(f.ctx, "r1", "c1", lease("", at(60)), at(5))
			wantErr(t, err, store.ErrInvalid)
		})
	}},
	{"claim_of_a_done_run_is_stale", func(t *testing.T, f *fixture) {
		f.created(t, "r1")
		if _, err := f.st.FinishRun(f.ctx, "r1", pipeline.Termination{Reason: pipeline.ReasonCancelled}, at(1)); err != nil {
			t.Fatal(err)
		}
		f.noEventsFrom(t, "r1", func() {
			_, err := f.st.ClaimStep(f.ctx, "r1", 0, lease("w1", at(30)), at(2))
			wantErr(t, err, store.ErrStale)
		})
		_, err := f.st.ClaimStep(f.ctx, "nope", 0, lease("w1", at(30)), at(2))
		wantErr(t, err, store.ErrNotFound)
	}},
	{"commit_appends_the_turn_and_creates_the_calls", func(t *testing.T, f *fixture) {
		f.claimed(t, "r1")
		c := commitOf("c1", "c2")
		c.Calls[1].Queue = "payments"
		run, calls, err := f.st.CommitStep(f.ctx, "r1", 0, "w1", c, at(2))
		if err != nil {
			t.Fatalf("CommitStep: %v", err)
		}
		if run.StepState != pipeline.StepTools || run.LeaseOwner != "" || !run.LeaseUntil.IsZero() ||
			run.Usage != (pipeline.Usage{InputTokens: 10, OutputTokens: 3}) {
			t.Fatalf("run = %+v", run)
		}
		if len(calls) != 2 || calls[0].Queue != store.DefaultQueue || calls[1].Queue != "payments" {
			t.Fatalf("calls = %+v", calls)
		}
		for i, call := range calls {
			if call.ID != c.Calls[i].ID || call.RunID != "r1" || call.Step != 0 || call.Index != i ||
				call.Status != pipeline.CallNew || call.Tool != "echo" || call.Attempts != 0 {
				t.Fatalf("call %d = %+v", i, call)
			}
			wantJSON(t, call.Arguments, string(c.Calls[i].Arguments))
		}
		stepCalls, err := f.st.StepCalls(f.ctx, "r1", 0)
		if err != nil || len(stepCalls) != 2 || stepCalls[0].ID != "c1" || stepCalls[1].ID != "c2" {
			t.Fatalf("StepCalls = %+v, %v", stepCalls, err)
		}
		msgs, _ := f.st.Messages(f.ctx, "r1")
		if len(msgs) != 2 || !sameMessage(msgs[1], c.Assistant) {
			t.Fatalf("messages = %+v", msgs)
		}
		evs := f.events(t, "r1")[3:]
		wantTypes(t, typesOf(evs), pipeline.EventAssistantMessage, pipeline.EventToolCallCreated, pipeline.EventToolCallCreated)
		wantJSON(t, evs[0].Data, `{"role":"assistant","content":"let me look","tool_calls":[`+
			`{"id":"c1","name":"echo","arguments":{"n":0}},{"id":"c2","name":"echo","arguments":{"n":1}}]}`)
		wantJSON(t, evs[2].Data, `{"tool":"echo","queue":"payments","index":1,"arguments":{"n":1},"status":"new"}`)
		if evs[2].CallID != "c2" || evs[2].Step != 0 {
			t.Fatalf("tool_call.created = %+v", evs[2])
		}
	}},
	{"committing_a_step_twice_is_stale", func(t *testing.T, f *fixture) {
		f.committed(t, "r1", "c1")
		f.noEventsFrom(t, "r1", func() {
			_, _, err := f.st.CommitStep(f.ctx, "r1", 0, "w1", commitOf("c2"), at(3))
			wantErr(t, err, store.ErrStale)
		})
		if calls, _ := f.st.StepCalls(f.ctx, "r1", 0); len(calls) != 1 {
			t.Fatalf("the second commit wrote calls: %+v", calls)
		}
	}},
	{"commit_by_another_owner_loses_the_lease", func(t *testing.T, f *fixture) {
		f.claimed(t, "r1")
		f.noEventsFrom(t, "r1", func() {
			_, _, err := f.st.CommitStep(f.ctx, "r1", 0, "w2", commitOf("c1"), at(2))
			wantErr(t, err, store.ErrLeaseLost)
		})
	}},
	{"commit_of_an_unclaimed_or_other_step_is_stale", func(t *testing.T, f *fixture) {
		f.created(t, "r1")
		f.noEventsFrom(t, "r1", func() {
			_, _, err := f.st.CommitStep(f.ctx, "r1", 0, "w1", commitOf("c1"), at(2))
			wantErr(t, err, store.ErrStale)
		})
		if _, err := f.st.ClaimStep(f.ctx, "r1", 0, lease("w1", at(30)), at(1)); err != nil {
			t.Fatal(err)
		}
		f.noEventsFrom(t, "r1", func() {
			_, _, err := f.st.CommitStep(f.ctx, "r1", 1, "w1", commitOf("c1"), at(2))
			wantErr(t, err, store.ErrStale)
		})
	}},
	{"commit_with_a_taken_call_id_is_a_conflict_and_writes_nothing", func(t *testing.T, f *fixture) {
		f.committed(t, "r1", "c1")
		f.done(t, "r1", "c1")
		if _, _, err := f.st.EndStep(f.ctx, "r1", 0, store.StepEnd{}, at(5)); err != nil {
			t.Fatalf("EndStep: %v", err)
		}
		if _, err := f.st.ClaimStep(f.ctx, "r1", 1, lease("w1", at(60)), at(6)); err != nil {
			t.Fatalf("ClaimStep(1): %v", err)
		}
		msgsBefore, _ := f.st.Messages(f.ctx, "r1")
		f.noEventsFrom(t, "r1", func() {
			_, _, err := f.st.CommitStep(f.ctx, "r1", 1, "w1", commitOf("c2", "c1"), at(7))
			wantErr(t, err, store.ErrConflict)
		})
		run := f.run(t, "r1")
		msgs, _ := f.st.Messages(f.ctx, "r1")
		calls, _ := f.st.StepCalls(f.ctx, "r1", 1)
		_, c2err := f.st.GetCall(f.ctx, "r1", "c2")
		if run.StepState != pipeline.StepInferring || len(msgs) != len(msgsBefore) || len(calls) != 0 || !errors.Is(c2err, store.ErrNotFound) ||
			run.Usage.InputTokens != 10 {
			t.Fatalf("the refused commit wrote: run %+v, %d messages, calls %+v, c2: %v", run, len(msgs), calls, c2err)
		}
	}},
	{"commit_refuses_calls_out_of_index_order", func(t *testing.T, f *fixture) {
		f.claimed(t, "r1")
		c := commitOf("c1", "c2")
		c.Calls[1].Index = 0
		_, _, err := f.st.CommitStep(f.ctx, "r1", 0, "w1", c, at(2))
		wantErr(t, err, store.ErrInvalid)
		_, _, err = f.st.CommitStep(f.ctx, "r1", 0, "w1", commitOf("c1", "c1"), at(2))
		wantErr(t, err, store.ErrInvalid)
	}},
	{"ending_a_step_with_a_non_terminal_call_is_stale", func(t *testing.T, f *fixture) {
		f.committed(t, "r1", "c1", "c2")
		f.done(t, "r1", "c1")
		f.noEventsFrom(t, "r1", func() {
			run, _, err := f.st.EndStep(f.ctx, "r1", 0, store.StepEnd{}, at(5))
			wantErr(t, err, store.ErrStale)
			if !strings.Contains(err.Error(), "c2") {
				t.Fatalf("the error does not name the running call: %v", err)
			}
			if run.StepState != pipeline.StepTools || run.Step != 0 {
				t.Fatalf("the refusal returned %+v, want the current run", run)
			}
		})
	}},
	{"ending_an_uncommitted_step_is_stale", func(t *testing.T, f *fixture) {
		f.claimed(t, "r1")
		f.noEventsFrom(t, "r1", func() {
			_, _, err := f.st.EndStep(f.ctx, "r1", 0, store.StepEnd{}, at(5))
			wantErr(t, err, store.ErrStale)
		})
	}},
	{"commit_and_end_ends_a_turn_without_calls_in_the_same_round_trip", func(t *testing.T, f *fixture) {
		f.claimed(t, "r1")
		end := store.StepEnd{Finish: &pipeline.Termination{Reason: pipeline.ReasonNaturalEnd}, CallIDs: []string{}}
		_, _, err := f.st.CommitAndEnd(f.ctx, "r1", 0, "w1", commitOf("c1"), end, at(2))
		wantErr(t, err, store.ErrInvalid)
		f.noEventsFrom(t, "r1", func() {
			_, _, err := f.st.CommitAndEnd(f.ctx, "r1", 0, "w9", commitOf(), end, at(2))
			wantErr(t, err, store.ErrLeaseLost)
		})
		held := f.decide(t, "r1", resume("d1", "c9"), at(2)) // for a call the run never has
		if held.Outcome != store.DecisionHeld {
			t.Fatalf("decision = %+v", held)
		}
		run, got, err := f.st.CommitAndEnd(f.ctx, "r1", 0, "w1", commitOf(), end, at(3))
		if err != nil || run.Status != pipeline.RunDone || run.Termination == nil ||
			run.Termination.Reason != pipeline.ReasonNaturalEnd || run.Usage.InputTokens != 10 {
			t.Fatalf("CommitAndEnd = %+v, %v", run, err)
		}
		if len(got) != 1 || got[0].ID != "d1" {
			t.Fatalf("held = %+v, want d1", got)
		}
		types := f.eventTypes(t, "r1")
		wantTypes(t, types[len(types)-3:], pipeline.EventAssistantMessage, pipeline.EventStepEnded, pipeline.EventRunFinished)
		if msgs, _ := f.st.Messages(f.ctx, "r1"); len(msgs) != 2 || msgs[1].Content != "let me look" {
			t.Fatalf("messages = %+v", msgs)
		}
	}},
	{"end_step_and_claim_claims_the_next_step_in_the_same_round_trip", func(t *testing.T, f *fixture) {
		f.committed(t, "r1", "c1")
		f.done(t, "r1", "c1")
		tool := pipeline.Message{Role: pipeline.RoleTool, Content: `{"ok":true}`, ToolCallID: "c1"}
		run, claimed, err := f.st.EndStepAndClaim(f.ctx, "r1", 0, store.StepEnd{ToolMessages: []pipeline.Message{tool}}, lease("w2", at(40)), at(5))
		if err != nil || claimed == nil {
			t.Fatalf("EndStepAndClaim = %+v, %v", claimed, err)
		}
		if run.Step != 1 || run.StepState != pipeline.StepInferring || run.Attempts != 1 || run.LeaseOwner != "w2" ||
			!run.LeaseUntil.Equal(at(40)) || claimed.Run.LeaseOwner != "w2" {
			t.Fatalf("run = %+v", run)
		}
		// The conversation is read after the end: the tool result is in it.
		if len(claimed.Messages) != 3 || !sameMessage(claimed.Messages[2], tool) {
			t.Fatalf("messages = %+v", claimed.Messages)
		}
		types := f.eventTypes(t, "r1")
		wantTypes(t, types[len(types)-2:], pipeline.EventStepEnded, pipeline.EventStepStarted)

		// An end that ends the run claims nothing.
		f.commit(t, "r1", 1, "w2")
		end := store.StepEnd{Finish: &pipeline.Termination{Reason: pipeline.ReasonNaturalEnd}}
		run, claimed, err = f.st.EndStepAndClaim(f.ctx, "r1", 1, end, lease("w2", at(60)), at(6))
		if err != nil || claimed != nil || run.Status != pipeline.RunDone {
			t.Fatalf("EndStepAndClaim ending the run = %+v, %+v, %v", run, claimed, err)
		}
		// A refused end claims nothing either.
		f.noEventsFrom(t, "r1", func() {
			_, claimed, err = f.st.EndStepAndClaim(f.ctx, "r1", 1, store.StepEnd{}, lease("w2", at(60)), at(7))
			wantErr(t, err, store.ErrStale)
			if claimed != nil {
				t.Fatalf("a refused end claimed %+v", claimed)
			}
		})
	}},
	{"a_late_end_leaves_the_next_step_to_whoever_ended_the_step", func(t *testing.T, f *fixture) {
		// Another handler ended step 0 without claiming step 1 (the
		// sweeper's reconcile requests it instead); a late fan-in of step 0
		// (a redelivered tool result) is refused and claims nothing, so
		// step 1 stays free for the worker the request reaches, rather than
		// leased to a caller that does not run it.
		f.committed(t, "r1", "c1")
		f.done(t, "r1", "c1")
		if _, _, err := f.st.EndStep(f.ctx, "r1", 0, store.StepEnd{}, at(5)); err != nil {
			t.Fatal(err)
		}
		f.noEventsFrom(t, "r1", func() {
			run, claimed, err := f.st.EndStepAndClaim(f.ctx, "r1", 0, store.StepEnd{}, lease("w2", at(40)), at(6))
			wantErr(t, err, store.ErrStale)
			if claimed != nil || run.Step != 1 || run.StepState != pipeline.StepPending || run.LeaseOwner != "" {
				t.Fatalf("EndStepAndClaim after another end = %+v, %+v; want step 1 pending and no claim", run, claimed)
			}
		})
		if _, err := f.st.ClaimStep(f.ctx, "r1", 1, lease("w3", at(40)), at(7)); err != nil {
			t.Fatalf("ClaimStep(1) after the late end: %v", err)
		}
	}},
	{"end_step_moves_the_run_to_the_next_step", func(t *testing.T, f *fixture) {
		f.committed(t, "r1", "c1")
		f.done(t, "r1", "c1")
		tool := pipeline.Message{Role: pipeline.RoleTool, Content: `{"ok":true}`, ToolCallID: "c1"}
		run, _, err := f.st.EndStep(f.ctx, "r1", 0, store.StepEnd{ToolMessages: []pipeline.Message{tool}}, at(5))
		if err != nil {
			t.Fatalf("EndStep: %v", err)
		}
		if run.Step != 1 || run.StepState != pipeline.StepPending || run.Attempts != 0 ||
			run.Status != pipeline.RunRunning || run.LeaseOwner != "" || run.Termination != nil {
			t.Fatalf("run = %+v", run)
		}
		msgs, _ := f.st.Messages(f.ctx, "r1")
		if len(msgs) != 3 || !sameMessage(msgs[2], tool) {
			t.Fatalf("messages = %+v", msgs)
		}
		types := f.eventTypes(t, "r1")
		wantTypes(t, types[len(types)-1:], pipeline.EventStepEnded)
		// A duplicate StepEnd for step 0 is a no-op.
		f.noEventsFrom(t, "r1", func() {
			_, _, err := f.st.EndStep(f.ctx, "r1", 0, store.StepEnd{ToolMessages: []pipeline.Message{tool}}, at(6))
			wantErr(t, err, store.ErrStale)
		})
		// The next step is claimable and counts its attempts afresh.
		run, err = f.st.ClaimStep(f.ctx, "r1", 1, lease("w2", at(60)), at(7))
		if err != nil || run.Attempts != 1 {
			t.Fatalf("ClaimStep(1) = %+v, %v", run, err)
		}
	}},
	{"end_step_with_a_finish_ends_the_run", func(t *testing.T, f *fixture) {
		f.committed(t, "r1", "c1")
		f.done(t, "r1", "c1")
		if err := f.st.ScheduleSweep(f.ctx, "r1", at(6)); err != nil {
			t.Fatal(err)
		}
		term := pipeline.Termination{Reason: pipeline.ReasonStopped, Code: "max_rounds"}
		run, _, err := f.st.EndStep(f.ctx, "r1", 0, store.StepEnd{Finish: &term}, at(5))
		if err != nil {
			t.Fatalf("EndStep: %v", err)
		}
		if run.Status != pipeline.RunDone || *run.Termination != term || run.Step != 0 {
			t.Fatalf("run = %+v", run)
		}
		evs := f.events(t, "r1")
		wantTypes(t, typesOf(evs[len(evs)-2:]), pipeline.EventStepEnded, pipeline.EventRunFinished)
		wantJSON(t, evs[len(evs)-1].Data, `{"reason":"stopped","code":"max_rounds"}`)
		// Ended, its result not yet out: the sweeper keeps it (the outbox).
		if due, _ := f.st.DueRuns(f.ctx, at(100), 10, at(200)); len(due) != 1 {
			t.Fatalf("a finished run whose result is not out is not due: %v", due)
		}
		f.noEventsFrom(t, "r1", func() {
			_, _, err := f.st.EndStep(f.ctx, "r1", 0, store.StepEnd{Finish: &term}, at(6))
			wantErr(t, err, store.ErrStale)
			_, err = f.st.FinishRun(f.ctx, "r1", pipeline.Termination{Reason: pipeline.ReasonCancelled}, at(6))
			wantErr(t, err, store.ErrStale)
		})
	}},
	{"a_step_without_calls_ends_at_once", func(t *testing.T, f *fixture) {
		f.committed(t, "r1")
		run, _, err := f.st.EndStep(f.ctx, "r1", 0, store.StepEnd{Finish: &pipeline.Termination{Reason: pipeline.ReasonNaturalEnd}}, at(3))
		if err != nil || run.Status != pipeline.RunDone {
			t.Fatalf("EndStep = %+v, %v", run, err)
		}
	}},
	{"end_step_refuses_a_finish_that_does_not_end_the_run", func(t *testing.T, f *fixture) {
		f.committed(t, "r1")
		_, _, err := f.st.EndStep(f.ctx, "r1", 0, store.StepEnd{Finish: &pipeline.Termination{Reason: pipeline.ReasonSuspended}}, at(3))
		wantErr(t, err, store.ErrInvalid)
	}},
	{"run_calls_lists_every_step_in_order", func(t *testing.T, f *fixture) {
		f.committed(t, "r1", "a", "b")
		f.done(t, "r1", "b")
		f.done(t, "r1", "a")
		if _, _, err := f.st.EndStep(f.ctx, "r1", 0, store.StepEnd{}, at(5)); err != nil {
			t.Fatal(err)
		}
		if _, err := f.st.ClaimStep(f.ctx, "r1", 1, lease("w1", at(60)), at(6)); err != nil {
			t.Fatal(err)
		}
		f.commit(t, "r1", 1, "w1", "z", "c")
		calls, err := f.st.RunCalls(f.ctx, "r1")
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, c := range calls {
			got = append(got, c.ID)
		}
		if strings.Join(got, ",") != "a,b,z,c" || calls[2].Step != 1 || calls[3].Index != 1 {
			t.Fatalf("RunCalls = %v", got)
		}
	}},
}
