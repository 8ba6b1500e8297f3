package store_test

import (
	"slices"
	"testing"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/store"
)

// The claim of a call that takes the other calls of its step waiting for
// their first claim with it (ADR 0025).
var siblingCases = []contractCase{
	{"a_claim_takes_the_new_calls_of_its_parallel_step_with_it", func(t *testing.T, f *fixture) {
		f.committed(t, "r1", "c1", "c2", "c3")
		call, sibs, err := f.st.ClaimCallAndSiblings(f.ctx, "r1", "c1", lease("t1", at(60)), at(3), store.Siblings{Max: 8})
		if err != nil || call.Status != pipeline.CallRunning || call.LeaseOwner != "t1" || call.Attempts != 1 {
			t.Fatalf("ClaimCallAndSiblings = %+v, %v", call, err)
		}
		if got := idsOf(sibs); !slices.Equal(got, []string{"c2", "c3"}) {
			t.Fatalf("siblings %v, want [c2 c3]", got)
		}
		for k, c := range sibs {
			stored := f.call(t, "r1", c.ID)
			if c.Status != pipeline.CallRunning || c.Attempts != 1 || c.LeaseOwner != "t1/"+string(rune('1'+k)) ||
				!c.LeaseUntil.Equal(at(60)) || !c.UpdatedAt.Equal(at(3)) || c.Step != 0 || c.Index != k+1 || c.Tool != "echo" ||
				string(c.Arguments) != string(stored.Arguments) || stored.LeaseOwner != c.LeaseOwner || stored.Status != c.Status {
				t.Fatalf("sibling %d = %+v; stored %+v", k, c, stored)
			}
			f.sameCall(t, "ClaimCallAndSiblings (a sibling)", "r1", c)
		}
		evs := f.events(t, "r1")
		evs = evs[len(evs)-3:]
		for i, id := range []string{"c1", "c2", "c3"} {
			if evs[i].Type != pipeline.EventToolCallStarted || evs[i].CallID != id || evs[i].Step != 0 || !evs[i].At.Equal(at(3)) {
				t.Fatalf("event %d = %+v", i, evs[i])
			}
			wantJSON(t, evs[i].Data, `{"attempt":1}`)
		}
		// A sibling's own request finds it taken; its finish under its
		// lease counts it down like any other, and the last fans in.
		f.noEventsFrom(t, "r1", func() {
			_, err := f.st.ClaimCall(f.ctx, "r1", "c2", lease("t2", at(90)), at(4))
			wantErr(t, err, store.ErrLeaseHeld)
		})
		for i, c := range append(sibs, call) {
			done, err := f.st.FinishCall(f.ctx, "r1", c.ID, c.LeaseOwner, succeeded, at(5))
			if err != nil || done.FanIn != (i == 2) {
				t.Fatalf("FinishCall(%s) = fan in %v, %v", c.ID, done.FanIn, err)
			}
		}
	}},
	{"a_claim_takes_at_most_max_others", func(t *testing.T, f *fixture) {
		f.committed(t, "r1", "c1", "c2", "c3")
		_, sibs, err := f.st.ClaimCallAndSiblings(f.ctx, "r1", "c2", lease("t1", at(60)), at(3), store.Siblings{Max: 1})
		if err != nil || !slices.Equal(idsOf(sibs), []string{"c1"}) {
			t.Fatalf("siblings %v, %v; want [c1]", idsOf(sibs), err)
		}
		if c := f.call(t, "r1", "c3"); c.Status != pipeline.CallNew || c.Attempts != 0 {
			t.Fatalf("c3 = %+v, want new", c)
		}
	}},
	{"a_claim_leaves_calls_claimed_before_of_another_queue_or_of_a_skipped_tool", func(t *testing.T, f *fixture) {
		f.claimed(t, "r1")
		c := commitOf("c1", "c2", "c3", "c4", "c5")
		c.Calls[2].Tool, c.Assistant.ToolCalls[2].Name = "limited", "limited"
		c.Calls[3].Queue = "gpu"
		if _, _, err := f.st.CommitStep(f.ctx, "r1", 0, "w1", c, at(2)); err != nil {
			t.Fatal(err)
		}
		if _, err := f.st.ClaimCall(f.ctx, "r1", "c2", lease("t9", at(60)), at(3)); err != nil {
			t.Fatal(err)
		}
		_, sibs, err := f.st.ClaimCallAndSiblings(f.ctx, "r1", "c1", lease("t1", at(60)), at(3),
			store.Siblings{Max: 8, SkipTools: []string{"other", "limited"}})
		if err != nil || !slices.Equal(idsOf(sibs), []string{"c5"}) {
			t.Fatalf("siblings %v, %v; want [c5]", idsOf(sibs), err)
		}
		for id, want := range map[string]string{"c2": "t9", "c3": "", "c4": ""} {
			if got := f.call(t, "r1", id); got.LeaseOwner != want || got.Attempts != min(len(want), 1) {
				t.Fatalf("%s = %+v, want untouched", id, got)
			}
		}
	}},
	{"a_claim_in_a_sequential_step_takes_no_other_call", func(t *testing.T, f *fixture) {
		f.committedSequential(t, "r1", "c1", "c2")
		_, sibs, err := f.st.ClaimCallAndSiblings(f.ctx, "r1", "c1", lease("t1", at(60)), at(3), store.Siblings{Max: 8})
		if err != nil || len(sibs) != 0 {
			t.Fatalf("siblings %v, %v; want none", idsOf(sibs), err)
		}
	}},
	{"a_refused_claim_takes_no_other_call", func(t *testing.T, f *fixture) {
		f.committed(t, "r1", "c1", "c2")
		if _, err := f.st.ClaimCall(f.ctx, "r1", "c1", lease("t9", at(60)), at(3)); err != nil {
			t.Fatal(err)
		}
		f.noEventsFrom(t, "r1", func() {
			call, sibs, err := f.st.ClaimCallAndSiblings(f.ctx, "r1", "c1", lease("t1", at(60)), at(4), store.Siblings{Max: 8})
			wantErr(t, err, store.ErrLeaseHeld)
			if call.LeaseOwner != "t9" || len(sibs) != 0 {
				t.Fatalf("refusal = %+v, %v", call, idsOf(sibs))
			}
		})
	}},
	{"a_sibling_whose_id_needs_escaping_gets_its_event_right", func(t *testing.T, f *fixture) {
		id := `c"2/é`
		f.committed(t, "r1", "c1", id)
		_, sibs, err := f.st.ClaimCallAndSiblings(f.ctx, "r1", "c1", lease("t1", at(60)), at(3), store.Siblings{Max: 8})
		if err != nil || !slices.Equal(idsOf(sibs), []string{id}) {
			t.Fatalf("siblings %v, %v", idsOf(sibs), err)
		}
		evs := f.events(t, "r1")
		if last := evs[len(evs)-1]; last.CallID != id || last.Type != pipeline.EventToolCallStarted {
			t.Fatalf("last event = %+v", last)
		}
	}},
}

func idsOf(calls []pipeline.ToolCall) []string {
	var out []string
	for _, c := range calls {
		out = append(out, c.ID)
	}
	return out
}
