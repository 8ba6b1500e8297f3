package store_test

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/store"
)

var pendingCases = []contractCase{
	{"list_pending_gives_parked_calls_oldest_first_and_filters", func(t *testing.T, f *fixture) {
		f.parkedAs(t, "a1", "alpha", "echo", at(10), "c1")
		f.parkedAs(t, "b1", "beta", "refund", at(5), "c1")
		f.parkedAs(t, "a2", "alpha", "refund", at(20), "x", "y")
		f.committed(t, "n1", "c1") // new, not pending
		wantPending(t, f, store.PendingFilter{}, "b1/c1", "a1/c1", "a2/x", "a2/y")
		wantPending(t, f, store.PendingFilter{Agent: "alpha"}, "a1/c1", "a2/x", "a2/y")
		wantPending(t, f, store.PendingFilter{Tool: "refund"}, "b1/c1", "a2/x", "a2/y")
		wantPending(t, f, store.PendingFilter{Agent: "alpha", Tool: "refund", Limit: 1}, "a2/x")
		wantPending(t, f, store.PendingFilter{Agent: "beta", Tool: "echo"})
		wantPending(t, f, store.PendingFilter{Limit: 2}, "b1/c1", "a1/c1")
		wantPending(t, f, store.PendingFilter{RunID: "a2"}, "a2/x", "a2/y")
		wantPending(t, f, store.PendingFilter{RunID: "a2", Tool: "echo"})
		wantPending(t, f, store.PendingFilter{RunID: "a2", Limit: 1}, "a2/x")
		wantPending(t, f, store.PendingFilter{RunID: "n1"})
		wantPending(t, f, store.PendingFilter{RunID: "nope"})
		got, err := f.st.ListPending(f.ctx, store.PendingFilter{RunID: "b1"})
		if err != nil || len(got) != 1 || got[0].Agent != "beta" || got[0].Call.Parking == nil ||
			!got[0].Call.Parking.ParkedAt.Equal(at(5)) {
			t.Fatalf("ListPending(b1) = %+v, %v", got, err)
		}
		_, err = f.st.ListPending(f.ctx, store.PendingFilter{RunID: "a{2}"})
		wantErr(t, err, store.ErrInvalid)
	}},
	{"list_pending_drops_entries_that_are_no_longer_pending", func(t *testing.T, f *fixture) {
		f.parkedAs(t, "r1", "alpha", "echo", at(2), "c1", "c2")
		f.parkedAs(t, "r2", "alpha", "echo", at(3), "c1")
		f.parkedAs(t, "r3", "alpha", "echo", at(4), "c1")
		// A run ended another way keeps its parked calls, but no decision
		// can apply to them any more.
		if _, err := f.st.FinishRun(f.ctx, "r2", pipeline.Termination{Reason: pipeline.ReasonError}, at(5)); err != nil {
			t.Fatal(err)
		}
		// Entries a crashed writer left behind: a call that moved on
		// without its entry being removed, one that never existed, and a
		// malformed member.
		pending := f.prefix + ":pending"
		if err := f.rdb.ZAdd(f.ctx, pending,
			redis.Z{Score: 1, Member: "{r3}ghost"}, redis.Z{Score: 1, Member: "garbage"}).Err(); err != nil {
			t.Fatal(err)
		}
		if _, err := f.st.ApplyDecision(f.ctx, "r1", resume("d1", "c1"), at(60), at(6)); err != nil {
			t.Fatal(err)
		}
		if err := f.rdb.ZAdd(f.ctx, pending, redis.Z{Score: 2, Member: "{r1}c1"}).Err(); err != nil {
			t.Fatal(err)
		}
		wantPending(t, f, store.PendingFilter{}, "r1/c2", "r3/c1")
		wantPending(t, f, store.PendingFilter{RunID: "r2"})
		members, err := f.rdb.ZRange(f.ctx, pending, 0, -1).Result()
		if err != nil || len(members) != 2 || members[0] != "{r1}c2" || members[1] != "{r3}c1" {
			t.Fatalf("pending index = %v, %v; want the stale entries gone", members, err)
		}
	}},
	{"a_decision_applied_and_read_leaves_the_index_and_schedules_its_run", func(t *testing.T, f *fixture) {
		f.parkedAs(t, "r1", "alpha", "echo", at(2), "c1", "c2")
		res, err := f.st.ApplyDecisionFirst(f.ctx, "r1", resume("d1", "c1"), at(60), at(6))
		if err != nil || res.Outcome != store.DecisionApplied {
			t.Fatalf("apply = %+v, %v", res, err)
		}
		pending := f.prefix + ":pending"
		if members, err := f.rdb.ZRange(f.ctx, pending, 0, -1).Result(); err != nil || len(members) != 2 {
			t.Fatalf("pending index = %v, %v; want both calls until the read after the decision", members, err)
		}
		snap, err := f.st.ReadAfterDecision(f.ctx, "r1", "c1", res, at(40), time.Minute, at(6))
		if err != nil {
			t.Fatal(err)
		}
		if members, err := f.rdb.ZRange(f.ctx, pending, 0, -1).Result(); err != nil || len(members) != 1 || members[0] != "{r1}c2" {
			t.Fatalf("pending index = %v, %v; want the decided call gone", members, err)
		}
		// The snapshot read with it sees the decision, its schedule and its
		// outcome (claimed), after the approval requests of the parkings.
		if !snap.Scheduled.Equal(at(40)) || snap.Run.Status != pipeline.RunRunning || len(snap.Calls) != 2 ||
			snap.Calls[0].Status != pipeline.CallResuming || len(snap.Outcomes) != 3 || snap.Outcomes[2].DecisionID != "d1" {
			t.Fatalf("snapshot %+v", snap)
		}
		// Not applied (the same decision again): the call stays indexed,
		// the run is scheduled all the same.
		res, err = f.st.ApplyDecisionFirst(f.ctx, "r1", resume("d1", "c2"), at(60), at(7))
		if err != nil || res.Outcome == store.DecisionApplied {
			t.Fatalf("a decision id seen before = %+v, %v; want it not applied", res, err)
		}
		if _, err := f.st.ReadAfterDecision(f.ctx, "r1", "c2", res, at(41), time.Minute, at(7)); err != nil {
			t.Fatal(err)
		}
		wantPending(t, f, store.PendingFilter{}, "r1/c2")
		if snap, err := f.st.Snapshot(f.ctx, "r1", 0, at(7)); err != nil || !snap.Scheduled.Equal(at(41)) {
			t.Fatalf("scheduled %v (%v), want %v", snap.Scheduled, err, at(41))
		}
	}},
}

// parkedAs creates run id of agent, claims step 0 and commits callIDs of
// tool, all suspended (replay) at now; the run stays running.
func (f *fixture) parkedAs(t *testing.T, id, agent, tool string, now time.Time, callIDs ...string) {
	t.Helper()
	f.createAt(t, id, agent, t0)
	if _, err := f.st.ClaimStep(f.ctx, id, 0, lease("w1", now.Add(time.Minute)), now); err != nil {
		t.Fatal(err)
	}
	c := suspendedCommit(pipeline.ResumeReplay, callIDs...)
	for i := range c.Calls {
		c.Calls[i].Tool = tool
	}
	if _, _, err := f.st.CommitStep(f.ctx, id, 0, "w1", c, now); err != nil {
		t.Fatalf("CommitStep(%s): %v", id, err)
	}
}
