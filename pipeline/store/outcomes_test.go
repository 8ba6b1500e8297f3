package store_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/store"
)

// outcomes returns the run's outbox as "decision:call:outcome:reason"
// lines ("ask:call:ticket@unix seconds" for an approval request), and
// empties it as a publisher would.
func (f *fixture) outcomes(t *testing.T, runID string) []string {
	t.Helper()
	got, err := f.st.Outcomes(f.ctx, runID)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, o := range got {
		if o.AsksApproval() {
			out = append(out, fmt.Sprintf("ask:%s:%s@%d", o.CallID, o.Ticket, o.ParkedAt.Unix()))
			continue
		}
		out = append(out, fmt.Sprintf("%s:%s:%s:%s", o.DecisionID, o.CallID, o.Outcome, o.Reason))
	}
	if err := f.st.OutcomesSent(f.ctx, runID, got); err != nil {
		t.Fatal(err)
	}
	return out
}

func wantOutcomes(t *testing.T, got []string, want ...string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("outcomes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// Every decision gets one outcome (two when held), in the step that
// decides it, the sweeper's on_timeout decision too; a duplicate none.
var outcomeCases = []contractCase{
	{"each_decision_gets_one_outcome_and_a_duplicate_none", func(t *testing.T, f *fixture) {
		f.parked(t, "r1", pipeline.ResumeReplay, at(2), "c1", "c2")
		f.decide(t, "r1", resume("d1", "c1"), at(3))
		f.decide(t, "r1", resume("d1", "c1"), at(4)) // duplicate
		bad := resume("d2", "c2")
		bad.ArgsHash = "nope"
		f.decide(t, "r1", bad, at(5))
		f.decide(t, "r1", store.Decision{ID: "timeout:c2", CallID: "c2", Action: store.ActionCancel, Timeout: true}, at(6))
		wantOutcomes(t, f.outcomes(t, "r1"),
			fmt.Sprintf("ask:c1:tk-c1@%d", at(2).Unix()),
			fmt.Sprintf("ask:c2:tk-c2@%d", at(2).Unix()),
			"d1:c1:applied:",
			"d2:c2:rejected:args_hash does not match the parked arguments",
			"timeout:c2:c2:applied:deadline passed: on_timeout cancel")
		if got := f.outcomes(t, "r1"); len(got) != 0 {
			t.Fatalf("sent outcomes came back: %v", got)
		}
	}},
	{"a_held_decision_gets_held_then_its_final_outcome", func(t *testing.T, f *fixture) {
		f.committed(t, "r1", "c1", "c2")
		f.decide(t, "r1", resume("d1", "c1"), at(3))
		f.decide(t, "r1", resume("d2", "c2"), at(3))
		if err := f.st.DropHeld(f.ctx, "r1", "c2", "d2", `call c2 did not "park"`, at(9)); err != nil {
			t.Fatal(err)
		}
		wantOutcomes(t, f.outcomes(t, "r1"),
			"d1:c1:held:call is new, not suspended yet",
			"d2:c2:held:call is new, not suspended yet",
			`d2:c2:rejected:call c2 did not "park"`)
	}},
	{"a_cancel_run_decision_gets_one_outcome", func(t *testing.T, f *fixture) {
		f.committed(t, "r1", "c1")
		f.decide(t, "r1", resume("d-held", "c1"), at(2))
		if _, err := f.st.CancelRun(f.ctx, "r1", "cancel-1", "ops", "", at(3)); err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{"cancel-1", "cancel-2"} { // a repeat, and another cancel of the done run
			if _, err := f.st.CancelRun(f.ctx, "r1", id, "ops", "", at(4)); !errors.Is(err, store.ErrStale) {
				t.Fatalf("CancelRun of a done run: %v", err)
			}
		}
		wantOutcomes(t, f.outcomes(t, "r1"),
			"d-held:c1:held:call is new, not suspended yet",
			"d-held:c1:rejected:run is done",
			"cancel-1::applied:",
			"cancel-2::rejected:run is already done")
	}},
	{"outcomes_are_claimed_by_one_publisher_at_a_time", func(t *testing.T, f *fixture) {
		f.parked(t, "r1", pipeline.ResumeReplay, at(2), "c1")
		f.outcomes(t, "r1") // its approval request, sent
		f.decide(t, "r1", resume("d1", "c1"), at(3))
		first, err := f.st.ClaimOutcomes(f.ctx, "r1", time.Minute, at(4))
		if err != nil || len(first) != 1 || first[0].DecisionID != "d1" {
			t.Fatalf("first claim: %+v, %v", first, err)
		}
		if second, err := f.st.ClaimOutcomes(f.ctx, "r1", time.Minute, at(4)); err != nil || len(second) != 0 {
			t.Fatalf("a second claim within the first: %+v, %v", second, err)
		}
		if err := f.st.OutcomesSent(f.ctx, "r1", first); err != nil {
			t.Fatal(err)
		}
		f.decide(t, "r1", resume("d1", "c1"), at(5)) // a duplicate: nothing new
		if after, err := f.st.ClaimOutcomes(f.ctx, "r1", time.Minute, at(6)); err != nil || len(after) != 0 {
			t.Fatalf("after the send: %+v, %v", after, err)
		}
	}},
}
