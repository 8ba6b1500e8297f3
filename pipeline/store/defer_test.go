package store_test

import (
	"testing"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/store"
)

var deferCases = []contractCase{
	{"a_deferred_step_is_pending_again_its_attempt_uncounted_until_its_time", func(t *testing.T, f *fixture) {
		f.claimed(t, "r1")
		f.noEventsFrom(t, "r1", func() {
			wantErr(t, f.st.DeferStep(f.ctx, "r1", 0, "w2", at(10), "not w2's", at(2)), store.ErrLeaseLost)
		})
		if err := f.st.DeferStep(f.ctx, "r1", 0, "w1", at(10), "model m: concurrency 2", at(2)); err != nil {
			t.Fatalf("DeferStep: %v", err)
		}
		run, err := f.st.GetRun(f.ctx, "r1")
		if err != nil || run.StepState != pipeline.StepPending || run.Attempts != 0 || run.LeaseOwner != "" ||
			!run.DeferUntil.Equal(at(10)) || !run.RequestedAt.IsZero() {
			t.Fatalf("after the defer: %+v, %v", run, err)
		}
		evs := f.events(t, "r1")
		last := evs[len(evs)-1]
		if last.Type != pipeline.EventStepDeferred {
			t.Fatalf("last event %s", last.Type)
		}
		wantJSON(t, last.Data, `{"until":"2023-11-14T22:13:30Z","reason":"model m: concurrency 2"}`)
		// Claimed again, it is the first attempt again.
		run, err = f.st.ClaimStep(f.ctx, "r1", 0, lease("w3", at(40)), at(11))
		if err != nil || run.Attempts != 1 {
			t.Fatalf("the claim after the defer: %+v, %v", run, err)
		}
		f.commit(t, "r1", 0, "w3", "c1")
	}},
}
