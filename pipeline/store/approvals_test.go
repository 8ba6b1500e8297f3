package store_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/store"
)

// Every parking asks for approval in the run's outbox, in the script that
// parks the call; the run's end closes the requests of calls still parked.
var approvalCases = []contractCase{
	{"a_parking_asks_for_approval_in_the_script_that_parks_and_each_request_reads_its_own_parking", func(t *testing.T, f *fixture) {
		f.claimed(t, "r1")
		if _, _, err := f.st.CommitStep(f.ctx, "r1", 0, "w1", suspendedCommit(pipeline.ResumeReplay, "c1"), at(2)); err != nil {
			t.Fatal(err)
		}
		asked, err := f.st.Outcomes(f.ctx, "r1")
		if err != nil || len(asked) != 1 || !asked[0].AsksApproval() || asked[0].CallID != "c1" || !asked[0].ParkedAt.Equal(at(2)) {
			t.Fatalf("outbox after the gate parked c1: %+v, %v", asked, err)
		}
		// Resumed, then parked again by its tool: a second request, after
		// the decision's outcome.
		f.decide(t, "r1", resume("d1", "c1"), at(3))
		if _, err := f.st.ClaimCall(f.ctx, "r1", "c1", lease("t1", at(60)), at(4)); err != nil {
			t.Fatal(err)
		}
		again := pipeline.Parking{Ticket: "tk-2", Reason: "over the limit", ResumeMode: pipeline.ResumeUseDecisionAsResult, Deadline: at(700), OnTimeout: "resume"}
		if _, err := f.st.FinishCall(f.ctx, "r1", "c1", "t1", store.CallOutcome{Status: pipeline.CallSuspended, Parking: &again}, at(5)); err != nil {
			t.Fatal(err)
		}
		all, err := f.st.Outcomes(f.ctx, "r1")
		if err != nil || len(all) != 3 || all[1].DecisionID != "d1" || !all[2].AsksApproval() || all[2].Ticket != "tk-2" || !all[2].ParkedAt.Equal(at(5)) {
			t.Fatalf("outbox after the tool parked c1 again: %+v, %v", all, err)
		}
		// Each request reads the parking it was asked for, the first from
		// the call's earlier parkings, with the run and the call.
		for i, want := range map[int]struct {
			ticket string
			mode   pipeline.ResumeMode
		}{0: {"tk-c1", pipeline.ResumeReplay}, 2: {"tk-2", pipeline.ResumeUseDecisionAsResult}} {
			run, call, err := f.st.Approval(f.ctx, all[i])
			if err != nil || run.Agent != "assistant" || string(run.Metadata) != `{"k":"v"}` || call.Tool != "echo" ||
				string(call.Arguments) != `{"n":0}` || call.Parking.Ticket != want.ticket || call.Parking.ResumeMode != want.mode ||
				!call.Parking.ParkedAt.Equal(all[i].ParkedAt) || call.Parking.ArgsHash == "" {
				t.Fatalf("Approval(%d) = %+v, %+v, %v", i, run, call.Parking, err)
			}
		}
	}},
	{"a_published_approval_request_is_not_claimed_again_and_an_unpublished_one_is_after_its_claim", func(t *testing.T, f *fixture) {
		f.parked(t, "r1", pipeline.ResumeReplay, at(2), "c1")
		first, err := f.st.ClaimOutcomes(f.ctx, "r1", time.Minute, at(3))
		if err != nil || len(first) != 1 || !first[0].AsksApproval() {
			t.Fatalf("first claim: %+v, %v", first, err)
		}
		// Its publisher died before the publish: the request is there for
		// the next claim once the first has run out, and only then.
		if again, err := f.st.ClaimOutcomes(f.ctx, "r1", time.Minute, at(30)); err != nil || len(again) != 0 {
			t.Fatalf("a claim within the first: %+v, %v", again, err)
		}
		// A reconcile's read within the claim says when it runs out, for
		// the sweeper to come back then.
		snap, err := f.st.Snapshot(f.ctx, "r1", time.Minute, at(30))
		if err != nil || len(snap.Outcomes) != 0 || !snap.OutboxClaimedUntil.Equal(at(63)) {
			t.Fatalf("snapshot within the claim: outcomes %+v, claimed until %s, %v", snap.Outcomes, snap.OutboxClaimedUntil, err)
		}
		again, err := f.st.ClaimOutcomes(f.ctx, "r1", time.Minute, at(64))
		if err != nil || len(again) != 1 || again[0].ID != first[0].ID {
			t.Fatalf("a claim after the first ran out: %+v, %v", again, err)
		}
		if err := f.st.OutcomesSent(f.ctx, "r1", again); err != nil {
			t.Fatal(err)
		}
		// Emptied, the outbox goes: a parked run keeps no empty stream.
		if n, err := f.rdb.Exists(f.ctx, f.prefix+":{r1}:outcomes").Result(); err != nil || n != 0 {
			t.Fatalf("the emptied outbox exists: %d, %v", n, err)
		}
		if after, err := f.st.ClaimOutcomes(f.ctx, "r1", time.Minute, at(200)); err != nil || len(after) != 0 {
			t.Fatalf("after the publish: %+v, %v", after, err)
		}
	}},
	{"a_cancel_closes_the_approval_requests_of_the_calls_still_parked", func(t *testing.T, f *fixture) {
		f.parked(t, "r1", pipeline.ResumeReplay, at(2), "c1", "c2")
		f.decide(t, "r1", resume("d1", "c1"), at(3))
		if _, err := f.st.CancelRun(f.ctx, "r1", "cancel-1", "ops", "stop", at(4)); err != nil {
			t.Fatal(err)
		}
		wantOutcomes(t, f.outcomes(t, "r1"),
			fmt.Sprintf("ask:c1:tk-c1@%d", at(2).Unix()),
			fmt.Sprintf("ask:c2:tk-c2@%d", at(2).Unix()),
			"d1:c1:applied:",
			"cancel:c2:c2:applied:run cancelled: ops: stop",
			"cancel-1::applied:")
	}},
	{"a_run_that_ends_closes_the_approval_requests_of_the_calls_still_parked", func(t *testing.T, f *fixture) {
		f.parked(t, "r1", pipeline.ResumeReplay, at(2), "c1")
		f.outcomes(t, "r1") // its approval request, sent
		if _, err := f.st.FinishRun(f.ctx, "r1", pipeline.Termination{Reason: pipeline.ReasonError, Detail: "boom"}, at(3)); err != nil {
			t.Fatal(err)
		}
		wantOutcomes(t, f.outcomes(t, "r1"), "cancel:c1:c1:applied:run ended: error: boom")
	}},
}
