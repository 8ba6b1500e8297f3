package store_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stepwise-run/stepwise/internal/testinfra"
	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/store"
)

var tenantPendingCases = []contractCase{
	{"a_tenants_pending_list_reads_its_own_index_which_decisions_and_cancels_leave", func(t *testing.T, f *fixture) {
		f.parkedFor(t, "b1", "big", at(1), "c1", "c2")
		f.parkedFor(t, "b2", "big", at(2), "c1")
		f.parkedFor(t, "s1", "small", at(3), "c1")
		f.parkedFor(t, "d1", "", at(4), "c1")                     // stored without a tenant: the default one's
		f.parkedFor(t, "d2", pipeline.DefaultTenant, at(5), "c1") // as the gateway stores it
		// A call the tool parks itself: claimed, then finished suspended.
		f.createFor(t, "b3", "big")
		f.commit(t, "b3", 0, "w1", "c1")
		if _, err := f.st.ClaimCall(f.ctx, "b3", "c1", lease("t1", at(60)), at(6)); err != nil {
			t.Fatal(err)
		}
		if _, err := f.st.FinishCall(f.ctx, "b3", "c1", "t1", store.CallOutcome{Status: pipeline.CallSuspended, Parking: parking(pipeline.ResumeReplay)}, at(6)); err != nil {
			t.Fatal(err)
		}

		wantPending(t, f, store.PendingFilter{Tenant: "small"}, "s1/c1")
		wantPending(t, f, store.PendingFilter{Tenant: "big"}, "b1/c1", "b1/c2", "b2/c1", "b3/c1")
		wantPending(t, f, store.PendingFilter{Tenant: "big", Limit: 1}, "b1/c1")
		wantPending(t, f, store.PendingFilter{Tenant: pipeline.DefaultTenant}, "d1/c1", "d2/c1")
		wantPending(t, f, store.PendingFilter{Tenant: "nobody"})
		wantPending(t, f, store.PendingFilter{}, "b1/c1", "b1/c2", "b2/c1", "s1/c1", "d1/c1", "d2/c1", "b3/c1")
		f.wantIndex(t, "small", "{s1}c1")
		f.wantIndex(t, pipeline.DefaultTenant) // the default tenant's calls are in the index of all only

		// Each way out of the pending state leaves the tenant's index too.
		if _, err := f.st.ApplyDecision(f.ctx, "s1", resume("d-s1", "c1"), at(60), at(7)); err != nil {
			t.Fatal(err)
		}
		res, err := f.st.ApplyDecisionFirst(f.ctx, "b1", resume("d-b1", "c2"), at(60), at(7))
		if err != nil || res.Outcome != store.DecisionApplied {
			t.Fatalf("apply = %+v, %v", res, err)
		}
		if _, err := f.st.ReadAfterDecision(f.ctx, "b1", "c2", res, at(40), time.Minute, at(7)); err != nil {
			t.Fatal(err)
		}
		if _, err := f.st.CancelRun(f.ctx, "b2", "x-b2", "alice", "no", at(8)); err != nil {
			t.Fatal(err)
		}
		f.wantIndex(t, "small")
		f.wantIndex(t, "big", "{b1}c1", "{b3}c1")
		wantPending(t, f, store.PendingFilter{}, "b1/c1", "d1/c1", "d2/c1", "b3/c1")

		// An entry a crashed writer left in a tenant's index is dropped by
		// that tenant's list.
		if err := f.rdb.ZAdd(f.ctx, f.prefix+":pending:t:small", redis.Z{Score: 1, Member: "{s1}c1"}).Err(); err != nil {
			t.Fatal(err)
		}
		wantPending(t, f, store.PendingFilter{Tenant: "small"})
		f.wantIndex(t, "small")
	}},
	{"a_tenants_pending_list_finds_the_calls_parked_before_its_index", func(t *testing.T, f *fixture) {
		f.parkedFor(t, "a1", "acme", at(1), "c1", "c2")
		f.parkedFor(t, "o1", "other", at(2), "c1")
		f.parkedFor(t, "d1", "", at(3), "c1")
		// As a Redis written by a stepwise before tenants' indexes: the
		// index of all only.
		f.del(t, f.prefix+":pending:t:acme", f.prefix+":pending:t:other")
		if err := f.rdb.ZAdd(f.ctx, f.prefix+":pending", redis.Z{Score: 0, Member: "garbage"}).Err(); err != nil {
			t.Fatal(err)
		}
		upgraded := store.New(f.rdb, store.WithPrefix(f.prefix))
		got, err := upgraded.ListPending(f.ctx, store.PendingFilter{Tenant: "acme"})
		if err != nil || len(got) != 2 || got[0].Call.ID != "c1" || got[1].Call.ID != "c2" || got[0].Tenant != "acme" {
			t.Fatalf("acme's pending after the upgrade = %+v, %v", got, err)
		}
		f.wantIndex(t, "acme", "{a1}c1", "{a1}c2")
		f.wantIndex(t, "other", "{o1}c1")
		// Once done for the Redis, it is not done again: a store started
		// later trusts the indexes.
		f.del(t, f.prefix+":pending:t:other")
		later := store.New(f.rdb, store.WithPrefix(f.prefix))
		if got, err := later.ListPending(f.ctx, store.PendingFilter{Tenant: "other"}); err != nil || len(got) != 0 {
			t.Fatalf("other's pending = %+v, %v; want the index as it is", got, err)
		}
	}},
	{"index_pending_puts_back_the_parked_calls_a_crash_left_out", func(t *testing.T, f *fixture) {
		f.parkedFor(t, "a1", "acme", at(1), "c1", "c2")
		// The process that parked them died before it indexed them.
		f.del(t, f.prefix+":pending", f.prefix+":pending:t:acme")
		wantPending(t, f, store.PendingFilter{Tenant: "acme"})
		snap, err := f.st.Snapshot(f.ctx, "a1", 0, at(2))
		if err != nil {
			t.Fatal(err)
		}
		for range 2 { // as often as reconciles look: the same entries
			if err := f.st.IndexPending(f.ctx, snap.Run, snap.Calls); err != nil {
				t.Fatal(err)
			}
		}
		wantPending(t, f, store.PendingFilter{Tenant: "acme"}, "a1/c1", "a1/c2")
		wantPending(t, f, store.PendingFilter{}, "a1/c1", "a1/c2")
		// Calls that are not parked are not indexed.
		f.createFor(t, "a2", "acme")
		run, calls := f.commit(t, "a2", 0, "w1", "n1")
		if err := f.st.IndexPending(f.ctx, run, calls); err != nil {
			t.Fatal(err)
		}
		f.wantIndex(t, "acme", "{a1}c1", "{a1}c2")
	}},
}

// createFor creates run id of tenant at t0, and has w1 claim its step 0.
func (f *fixture) createFor(t *testing.T, id, tenant string) {
	t.Helper()
	run := newRun(id)
	run.Tenant = tenant
	if _, _, err := f.st.CreateRun(f.ctx, run, input, t0); err != nil {
		t.Fatalf("CreateRun(%s): %v", id, err)
	}
	if _, err := f.st.ClaimStep(f.ctx, id, 0, lease("w1", at(30)), at(1)); err != nil {
		t.Fatalf("ClaimStep(%s): %v", id, err)
	}
}

// parkedFor creates run id of tenant and commits its step 0 with callIDs
// all suspended (replay) at now.
func (f *fixture) parkedFor(t *testing.T, id, tenant string, now time.Time, callIDs ...string) {
	t.Helper()
	f.createFor(t, id, tenant)
	if _, _, err := f.st.CommitStep(f.ctx, id, 0, "w1", suspendedCommit(pipeline.ResumeReplay, callIDs...), now); err != nil {
		t.Fatalf("CommitStep(%s): %v", id, err)
	}
}

// del deletes keys one by one (a cluster puts them in different slots).
func (f *fixture) del(t *testing.T, keys ...string) {
	t.Helper()
	for _, k := range keys {
		if err := f.rdb.Del(f.ctx, k).Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// wantIndex checks the pending index of tenant holds exactly members, in
// order.
func (f *fixture) wantIndex(t *testing.T, tenant string, members ...string) {
	t.Helper()
	got, err := f.rdb.ZRange(f.ctx, f.prefix+":pending:t:"+tenant, 0, -1).Result()
	if err != nil || fmt.Sprint(got) != fmt.Sprint(members) && len(got)+len(members) > 0 {
		t.Fatalf("pending index of %s = %v, %v; want %v", tenant, got, err, members)
	}
}

// A tenant's list of its pending calls costs Redis what its own calls cost,
// not what every tenant's do: with 300 calls of another tenant parked, it
// runs a handful of commands (it ran one per call and run of the index of
// all, 600 and more, before tenants had indexes of their own).
func TestStore_a_tenants_pending_list_costs_its_own_calls(t *testing.T) {
	rdb := testinfra.RedisServerClient(t)
	var commands atomic.Int64
	rdb.AddHook(countingHook{&commands})
	f := &fixture{st: store.New(rdb), rdb: rdb, prefix: store.DefaultPrefix, ctx: context.Background()}
	for i := range 60 {
		f.parkedFor(t, fmt.Sprintf("big%02d", i), "big", at(1+i), "c1", "c2", "c3", "c4", "c5")
	}
	f.parkedFor(t, "small1", "small", at(100), "c1")
	for range 2 { // the first list looks whether calls parked before the tenants' indexes are in them
		commands.Store(0)
		wantPending(t, f, store.PendingFilter{Tenant: "small"}, "small1/c1")
	}
	if n := commands.Load(); n > 5 {
		t.Errorf("listing one tenant's one pending call ran %d commands", n)
	}
}

// countingHook counts the commands a client sends, those of pipelines too.
type countingHook struct{ n *atomic.Int64 }

func (h countingHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h countingHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.n.Add(1)
		return next(ctx, cmd)
	}
}

func (h countingHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.n.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}
