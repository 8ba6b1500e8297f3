package store_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/store"
)

var runCases = []contractCase{
	{"an_ended_run_keeps_only_the_termination_it_has", func(t *testing.T, f *fixture) {
		f.committed(t, "r1", "c1")
		f.done(t, "r1", "c1")
		if _, _, err := f.st.EndStep(f.ctx, "r1", 0, store.StepEnd{
			Finish: &pipeline.Termination{Reason: pipeline.ReasonNaturalEnd}}, at(5)); err != nil {
			t.Fatal(err)
		}
		f.created(t, "r2")
		cancelled := pipeline.Termination{Reason: pipeline.ReasonCancelled, Detail: "by alice"}
		if _, err := f.st.FinishRun(f.ctx, "r2", cancelled, at(2)); err != nil {
			t.Fatal(err)
		}
		f.created(t, "r3")
		failed := pipeline.Termination{Reason: pipeline.ReasonError, Code: "model_error", Detail: "429"}
		if _, err := f.st.FinishRun(f.ctx, "r3", failed, at(2)); err != nil {
			t.Fatal(err)
		}
		for id, want := range map[string][]any{"r1": {"natural_end", nil, nil}, "r2": {"cancelled", nil, "by alice"},
			"r3": {"error", "model_error", "429"}} {
			got, err := f.rdb.HMGet(f.ctx, f.prefix+":{"+id+"}:run", "term_reason", "term_code", "term_detail").Result()
			if err != nil || !slices.Equal(got, want) {
				t.Errorf("run %s's termination fields = %q, %v; want %q", id, got, err, want)
			}
		}
		if r := f.run(t, "r3"); r.Termination == nil || *r.Termination != failed {
			t.Fatalf("run r3's termination = %+v", r.Termination)
		}
	}},
	{"create_writes_a_created_run_its_input_and_one_event", func(t *testing.T, f *fixture) {
		run, created, err := f.st.CreateRun(f.ctx, newRun("r1"), input, t0)
		if err != nil || !created {
			t.Fatalf("CreateRun = %v, %v", created, err)
		}
		if run.Status != pipeline.RunCreated || run.Step != 0 || run.StepState != pipeline.StepPending ||
			run.Agent != "assistant" || !run.CreatedAt.Equal(t0) || !run.UpdatedAt.Equal(t0) {
			t.Fatalf("run = %+v", run)
		}
		wantJSON(t, run.Metadata, `{"k":"v"}`)
		if got := f.run(t, "r1"); got.RequestHash != "hash-r1" || got.Status != pipeline.RunCreated {
			t.Fatalf("GetRun = %+v", got)
		}
		msgs, err := f.st.Messages(f.ctx, "r1")
		if err != nil || !slices.EqualFunc(msgs, input, sameMessage) {
			t.Fatalf("Messages = %+v, %v", msgs, err)
		}
		evs := f.events(t, "r1")
		wantTypes(t, typesOf(evs), pipeline.EventRunCreated)
		if evs[0].RunID != "r1" || !evs[0].At.Equal(t0) || evs[0].ID == "" {
			t.Fatalf("event = %+v", evs[0])
		}
		wantJSON(t, evs[0].Data, `{"agent":"assistant"}`)
	}},
	{"create_replayed_with_the_same_request_is_idempotent", func(t *testing.T, f *fixture) {
		first := f.created(t, "r1")
		again, created, err := f.st.CreateRun(f.ctx, newRun("r1"), input, at(9))
		if err != nil || created {
			t.Fatalf("replay = %v, %v", created, err)
		}
		if !again.CreatedAt.Equal(first.CreatedAt) || again.Status != first.Status {
			t.Fatalf("replay returned %+v, want the stored %+v", again, first)
		}
		msgs, _ := f.st.Messages(f.ctx, "r1")
		if len(msgs) != len(input) {
			t.Fatalf("replay appended messages: %d", len(msgs))
		}
		wantTypes(t, f.eventTypes(t, "r1"), pipeline.EventRunCreated)
	}},
	{"create_with_a_different_request_is_a_conflict", func(t *testing.T, f *fixture) {
		f.created(t, "r1")
		other := newRun("r1")
		other.RequestHash = "another"
		f.noEventsFrom(t, "r1", func() {
			_, _, err := f.st.CreateRun(f.ctx, other, input, at(9))
			wantErr(t, err, store.ErrConflict)
		})
	}},
	{"create_refuses_an_id_that_would_break_the_hash_tag", func(t *testing.T, f *fixture) {
		for _, id := range []string{"", "a{b", "}x"} {
			_, _, err := f.st.CreateRun(f.ctx, newRun(id), input, t0)
			wantErr(t, err, store.ErrInvalid)
		}
	}},
	{"reads_of_an_unknown_run_are_not_found", func(t *testing.T, f *fixture) {
		_, err := f.st.GetRun(f.ctx, "nope")
		wantErr(t, err, store.ErrNotFound)
		_, err = f.st.Messages(f.ctx, "nope")
		wantErr(t, err, store.ErrNotFound)
		_, err = f.st.StepCalls(f.ctx, "nope", 0)
		wantErr(t, err, store.ErrNotFound)
		_, err = f.st.RunCalls(f.ctx, "nope")
		wantErr(t, err, store.ErrNotFound)
		_, err = f.st.GetCall(f.ctx, "nope", "c1")
		wantErr(t, err, store.ErrNotFound)
	}},
	{"finish_run_ends_the_run_with_its_termination", func(t *testing.T, f *fixture) {
		f.claimed(t, "r1")
		if err := f.st.ScheduleSweep(f.ctx, "r1", at(5)); err != nil {
			t.Fatal(err)
		}
		term := pipeline.Termination{Reason: pipeline.ReasonCancelled, Detail: "by operator"}
		run, err := f.st.FinishRun(f.ctx, "r1", term, at(3))
		if err != nil {
			t.Fatalf("FinishRun: %v", err)
		}
		if run.Status != pipeline.RunDone || run.Termination == nil || *run.Termination != term ||
			run.StepState != pipeline.StepInferring || !run.UpdatedAt.Equal(at(3)) {
			t.Fatalf("run = %+v", run)
		}
		evs := f.events(t, "r1")
		last := evs[len(evs)-1]
		if last.Type != pipeline.EventRunFinished || last.Step != 0 {
			t.Fatalf("last event = %+v", last)
		}
		wantJSON(t, last.Data, `{"reason":"cancelled","detail":"by operator"}`)
		// Ended, its result not yet out: the sweeper keeps it (the outbox).
		if due, _ := f.st.DueRuns(f.ctx, at(100), 10, at(200)); len(due) != 1 {
			t.Fatalf("a finished run whose result is not out is not due: %v", due)
		}
		// The worker that held the step finds the run done.
		_, _, err = f.st.CommitStep(f.ctx, "r1", 0, "w1", commitOf(), at(4))
		wantErr(t, err, store.ErrStale)
	}},
	{"finishing_a_run_twice_is_stale", func(t *testing.T, f *fixture) {
		f.created(t, "r1")
		if _, err := f.st.FinishRun(f.ctx, "r1", pipeline.Termination{Reason: pipeline.ReasonError}, at(1)); err != nil {
			t.Fatal(err)
		}
		f.noEventsFrom(t, "r1", func() {
			run, err := f.st.FinishRun(f.ctx, "r1", pipeline.Termination{Reason: pipeline.ReasonCancelled}, at(2))
			wantErr(t, err, store.ErrStale)
			if run.Status != pipeline.RunDone || run.Termination.Reason != pipeline.ReasonError {
				t.Fatalf("the refusal returned %+v, want the current run", run)
			}
		})
	}},
	{"finish_run_refuses_a_reason_that_does_not_end_a_run", func(t *testing.T, f *fixture) {
		f.created(t, "r1")
		for _, r := range []pipeline.TerminationReason{"", pipeline.ReasonSuspended} {
			_, err := f.st.FinishRun(f.ctx, "r1", pipeline.Termination{Reason: r}, at(1))
			wantErr(t, err, store.ErrInvalid)
		}
		_, err := f.st.FinishRun(f.ctx, "nope", pipeline.Termination{Reason: pipeline.ReasonError}, at(1))
		wantErr(t, err, store.ErrNotFound)
	}},
	{"stores_with_different_prefixes_do_not_see_each_other", func(t *testing.T, f *fixture) {
		f.created(t, "r1")
		other := store.New(f.rdb, store.WithPrefix(f.prefix+"-other"))
		_, err := other.GetRun(f.ctx, "r1")
		wantErr(t, err, store.ErrNotFound)
		if _, created, err := other.CreateRun(f.ctx, newRun("r1"), nil, at(1)); err != nil || !created {
			t.Fatalf("the same id under another prefix: %v, %v", created, err)
		}
		runs, _, err := other.ListRuns(f.ctx, store.ListFilter{})
		if err != nil || len(runs) != 1 || !runs[0].CreatedAt.Equal(at(1)) {
			t.Fatalf("ListRuns = %+v, %v", runs, err)
		}
	}},
}

func sameMessage(a, b pipeline.Message) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}
