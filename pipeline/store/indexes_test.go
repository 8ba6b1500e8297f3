package store_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stepwise-run/stepwise/internal/tooling/testinfra"
	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/store"
)

var tenantIndexCases = []contractCase{
	{"a_status_list_reads_the_live_index_which_ended_runs_leave", func(t *testing.T, f *fixture) {
		f.created(t, "c1")
		f.claimed(t, "r1")
		f.parked(t, "w1", pipeline.ResumeReplay, at(2), "x")
		for _, id := range []string{"e1", "e2"} {
			f.created(t, id)
			f.finishRun(t, id)
		}
		if err := f.st.MarkPublished(f.ctx, f.run(t, "e1"), at(3)); err != nil {
			t.Fatal(err)
		}
		// e2 ended and is not yet published (retired): still in the index,
		// not in a list of live runs.
		f.wantLive(t, "c1", "e2", "r1", "w1")
		for _, c := range []struct {
			status pipeline.RunStatus
			want   string
		}{{pipeline.RunCreated, "[c1]"}, {pipeline.RunRunning, "[r1]"}, {pipeline.RunWaiting, "[w1]"}, {pipeline.RunDone, "[e2 e1]"}} {
			if got, _ := f.list(t, store.ListFilter{Status: c.status}); fmt.Sprint(got) != c.want {
				t.Errorf("status %s lists %v, want %s", c.status, got, c.want)
			}
		}
		// A page that finds an ended run in the live index takes it out.
		f.wantLive(t, "c1", "r1", "w1")
		// An entry whose run is not written yet (a run being created: its
		// indexes go first) is not listed, and stays.
		if err := f.rdb.ZAdd(f.ctx, f.prefix+":live", redis.Z{Score: float64(t0.UnixMilli()), Member: "n1"}).Err(); err != nil {
			t.Fatal(err)
		}
		if got, _ := f.list(t, store.ListFilter{Status: pipeline.RunCreated}); fmt.Sprint(got) != "[c1]" {
			t.Errorf("created lists %v with n1 being created", got)
		}
		f.wantLive(t, "c1", "n1", "r1", "w1")
		if err := f.st.Forget(f.ctx, "n1"); err != nil { // never written: the sweeper forgets it
			t.Fatal(err)
		}
		f.wantLive(t, "c1", "r1", "w1")
		if err := f.st.MarkPublished(f.ctx, f.run(t, "e2"), at(4)); err != nil {
			t.Fatal(err)
		}
		// The last step's end retires its run too.
		f.finishRun(t, "r1")
		if err := f.st.MarkPublished(f.ctx, f.run(t, "r1"), at(5)); err != nil {
			t.Fatal(err)
		}
		f.wantLive(t, "c1", "w1")
		if got, _ := f.list(t, store.ListFilter{Status: pipeline.RunRunning}); len(got) != 0 {
			t.Errorf("running lists %v after r1 ended", got)
		}
	}},
	{"a_status_list_finds_the_runs_created_before_the_live_index", func(t *testing.T, f *fixture) {
		f.claimed(t, "r1")
		f.created(t, "e1")
		f.finishRun(t, "e1")
		f.claimed(t, "r2")
		f.del(t, f.prefix+":live")
		upgraded := store.New(f.rdb, store.WithPrefix(f.prefix))
		runs, _, err := upgraded.ListRuns(f.ctx, store.ListFilter{Status: pipeline.RunRunning})
		if err != nil || fmt.Sprint(runIDs(runs)) != "[r2 r1]" {
			t.Fatalf("running after the upgrade = %v, %v", runIDs(runs), err)
		}
		f.wantLive(t, "r1", "r2")
	}},
	{"a_tenants_run_list_reads_its_own_index_page_by_page", func(t *testing.T, f *fixture) {
		for i, c := range []struct{ id, tenant string }{
			{"a1", "acme"}, {"b1", "beta"}, {"a2", "acme"}, {"d1", ""}, {"b2", "beta"}, {"a3", "acme"}, {"d2", pipeline.DefaultTenant},
		} {
			run := newRun(c.id)
			run.Tenant = c.tenant
			f.create(t, run, at(i))
		}
		f.wantRunIndex(t, "acme", "a1", "a2", "a3")
		f.wantRunIndex(t, "beta", "b1", "b2")
		f.wantRunIndex(t, pipeline.DefaultTenant) // the default tenant's runs are in the index of all only
		if got, _ := f.list(t, store.ListFilter{Tenant: "acme"}); fmt.Sprint(got) != "[a3 a2 a1]" {
			t.Errorf("acme lists %v", got)
		}
		// Page by page: a page of one scans one entry of acme's index, not
		// the runs of others in between.
		var pages []string
		cursor := ""
		for range 4 {
			got, next := f.list(t, store.ListFilter{Tenant: "acme", Limit: 1, Cursor: cursor})
			pages = append(pages, fmt.Sprint(got))
			if cursor = next; cursor == "" {
				break
			}
		}
		if fmt.Sprint(pages) != "[[a3] [a2] [a1] []]" {
			t.Errorf("acme's pages of one: %v", pages)
		}
		if got, _ := f.list(t, store.ListFilter{Tenant: pipeline.DefaultTenant}); fmt.Sprint(got) != "[d2 d1]" {
			t.Errorf("the default tenant lists %v", got)
		}
		if got, _ := f.list(t, store.ListFilter{}); len(got) != 7 {
			t.Errorf("every tenant lists %v", got)
		}
		// The same run created again (a retried request) is listed once.
		again := newRun("a2")
		again.Tenant = "acme"
		if _, _, err := f.st.CreateRun(f.ctx, again, input, at(50)); err != nil {
			t.Fatal(err)
		}
		f.wantRunIndex(t, "acme", "a1", "a2", "a3")
		// An entry whose run is not there is not listed, and stays: the
		// run may be being created (its indexes are written first); one
		// never written is the sweeper's to forget.
		f.del(t, f.prefix+":{a2}:run")
		if got, _ := f.list(t, store.ListFilter{Tenant: "acme"}); fmt.Sprint(got) != "[a3 a1]" {
			t.Errorf("acme lists %v after a2 went", got)
		}
		f.wantRunIndex(t, "acme", "a1", "a2", "a3")
	}},
	{"expired_and_forgotten_runs_leave_their_tenants_index", func(t *testing.T, f *fixture) {
		f = f.retaining(retention)
		for _, c := range []struct{ id, tenant string }{{"a1", "acme"}, {"a2", "acme"}, {"b1", "beta"}} {
			run := newRun(c.id)
			run.Tenant = c.tenant
			f.create(t, run, t0)
			if _, err := f.st.FinishRun(f.ctx, c.id, pipeline.Termination{Reason: pipeline.ReasonCancelled}, at(2)); err != nil {
				t.Fatal(err)
			}
			if err := f.st.MarkPublished(f.ctx, f.run(t, c.id), at(3)); err != nil {
				t.Fatal(err)
			}
		}
		// a1 and b1 expire (their keys deleted, as an expiry would).
		for _, id := range []string{"a1", "b1"} {
			f.del(t, slices.Collect(mapKeys(f.runKeys(t, id), f.prefix+":{"+id+"}:"))...)
		}
		if n, err := f.st.TrimRetired(f.ctx, at(3).Add(retention), 100); err != nil || n != 2 {
			t.Fatalf("TrimRetired = %d, %v; want a1 and b1 trimmed", n, err)
		}
		f.wantRunIndex(t, "acme", "a2")
		f.wantRunIndex(t, "beta")
		if err := f.st.Forget(f.ctx, "a2"); err != nil {
			t.Fatal(err)
		}
		f.wantRunIndex(t, "acme")
		if n, _ := f.rdb.ZCard(f.ctx, f.prefix+":retired:owned").Result(); n != 0 {
			t.Errorf("the retired index holds %d runs after the trim and the forget", n)
		}
	}},
	{"runs_retired_by_id_alone_leave_every_tenants_index", func(t *testing.T, f *fixture) {
		// As a store before the retired index had tenants retired them: by
		// id, in the retired index of ids, which the trim still empties.
		f = f.retaining(retention)
		for _, c := range []struct{ id, tenant string }{{"a1", "acme"}, {"b1", "beta"}, {"d1", ""}} {
			f.createdAt(t, c.id, c.tenant, t0)
			f.finishRun(t, c.id)
			if err := f.st.MarkPublished(f.ctx, f.run(t, c.id), at(5)); err != nil {
				t.Fatal(err)
			}
			member := c.id + "{" + c.tenant // the default tenant's runs: none
			score, err := f.rdb.ZScore(f.ctx, f.prefix+":retired:owned", member).Result()
			if err != nil {
				t.Fatalf("%s is not in the retired index with its tenant (%q): %v", c.id, member, err)
			}
			f.del(t, f.prefix+":retired:owned")
			if err := f.rdb.ZAdd(f.ctx, f.prefix+":retired", redis.Z{Score: score, Member: c.id}).Err(); err != nil {
				t.Fatal(err)
			}
			f.del(t, slices.Collect(mapKeys(f.runKeys(t, c.id), f.prefix+":{"+c.id+"}:"))...)
		}
		if n, err := f.st.TrimRetired(f.ctx, at(5).Add(retention), 100); err != nil || n != 3 {
			t.Fatalf("TrimRetired = %d, %v; want a1, b1 and d1 trimmed", n, err)
		}
		f.wantRunIndex(t, "acme")
		f.wantRunIndex(t, "beta")
		for _, index := range []string{"runs", "live", "retired"} {
			if n, _ := f.rdb.ZCard(f.ctx, f.prefix+":"+index).Result(); n != 0 {
				t.Errorf("%s holds %d entries", index, n)
			}
		}
	}},
	{"a_tenants_run_list_finds_the_runs_created_before_its_index", func(t *testing.T, f *fixture) {
		for i, c := range []struct{ id, tenant string }{{"a1", "acme"}, {"o1", "other"}, {"a2", "acme"}, {"d1", ""}} {
			run := newRun(c.id)
			run.Tenant = c.tenant
			f.create(t, run, at(i))
		}
		// As a Redis written by a stepwise before tenants' indexes: the
		// index of all only, with an entry left behind by a crash.
		f.del(t, f.prefix+":runs:t:acme", f.prefix+":runs:t:other", f.prefix+":tenants")
		if err := f.rdb.ZAdd(f.ctx, f.prefix+":runs", redis.Z{Score: 1, Member: "ghost"}).Err(); err != nil {
			t.Fatal(err)
		}
		upgraded := store.New(f.rdb, store.WithPrefix(f.prefix))
		runs, _, err := upgraded.ListRuns(f.ctx, store.ListFilter{Tenant: "acme"})
		if err != nil || fmt.Sprint(runIDs(runs)) != "[a2 a1]" {
			t.Fatalf("acme's runs after the upgrade = %v, %v", runIDs(runs), err)
		}
		f.wantRunIndex(t, "other", "o1")
		if got, err := f.rdb.SMembers(f.ctx, f.prefix+":tenants").Result(); err != nil || len(got) != 2 {
			t.Fatalf("tenants = %v, %v; want acme and other, for the trim of expired runs", got, err)
		}
		// Once done for the Redis, it is not done again.
		f.del(t, f.prefix+":runs:t:other")
		later := store.New(f.rdb, store.WithPrefix(f.prefix))
		if runs, _, err := later.ListRuns(f.ctx, store.ListFilter{Tenant: "other"}); err != nil || len(runs) != 0 {
			t.Fatalf("other's runs = %v, %v; want the index as it is", runIDs(runs), err)
		}
	}},
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
	{"a_waiting_run_whose_calls_could_not_be_indexed_stays_on_the_schedule", func(t *testing.T, f *fixture) {
		f.parkedFor(t, "a1", "", at(1), "c1")
		if err := f.st.ScheduleSweep(f.ctx, "a1", at(5)); err != nil {
			t.Fatal(err)
		}
		snap, err := f.st.Snapshot(f.ctx, "a1", 0, at(2))
		if err != nil {
			t.Fatal(err)
		}
		// The index's write fails (here: a key of the wrong type; out of
		// memory, Redis refuses a ZADD and not the script's ZREM).
		pending := f.prefix + ":pending"
		f.del(t, pending)
		if err := f.rdb.Set(f.ctx, pending, "not a sorted set", 0).Err(); err != nil {
			t.Fatal(err)
		}
		if _, err := f.st.RescheduleWaiting(f.ctx, snap.Run, snap.Calls, snap.Scheduled, time.Time{}); err == nil {
			t.Fatal("RescheduleWaiting with the index unwritable: no error")
		}
		// The reschedule took the run off the schedule; it is back on it,
		// so that a sweep indexes the call once the index can be written.
		score, err := f.rdb.ZScore(f.ctx, f.prefix+":active", "a1").Result()
		if err != nil || score != float64(at(5).UnixMilli()) {
			t.Fatalf("schedule of a1 = %v, %v; want %v", score, err, at(5).UnixMilli())
		}
		f.del(t, pending)
	}},
	{"rescheduling_a_waiting_run_puts_back_the_parked_calls_a_crash_left_out", func(t *testing.T, f *fixture) {
		f.parkedFor(t, "a1", "acme", at(1), "c1", "c2")
		// The process that parked them died before it indexed them.
		f.del(t, f.prefix+":pending", f.prefix+":pending:t:acme")
		wantPending(t, f, store.PendingFilter{Tenant: "acme"})
		snap, err := f.st.Snapshot(f.ctx, "a1", 0, at(2))
		if err != nil {
			t.Fatal(err)
		}
		for range 2 { // as often as reconciles look: the same entries
			if _, err := f.st.RescheduleWaiting(f.ctx, snap.Run, snap.Calls, snap.Scheduled, at(600)); err != nil {
				t.Fatal(err)
			}
		}
		wantPending(t, f, store.PendingFilter{Tenant: "acme"}, "a1/c1", "a1/c2")
		wantPending(t, f, store.PendingFilter{}, "a1/c1", "a1/c2")
		// Calls that are not parked are not indexed.
		f.createFor(t, "a2", "acme")
		run, calls := f.commit(t, "a2", 0, "w1", "n1")
		if _, err := f.st.RescheduleWaiting(f.ctx, run, calls, time.Time{}, time.Time{}); err != nil {
			t.Fatal(err)
		}
		f.wantIndex(t, "acme", "{a1}c1", "{a1}c2")
	}},
}

// createFor creates run id of tenant at t0, and has w1 claim its step 0.
func (f *fixture) createFor(t *testing.T, id, tenant string) {
	t.Helper()
	f.createdAt(t, id, tenant, t0)
}

// createdAt creates run id of tenant at created, and has w1 claim its step
// 0.
func (f *fixture) createdAt(t *testing.T, id, tenant string, created time.Time) {
	t.Helper()
	run := newRun(id)
	run.Tenant = tenant
	f.create(t, run, created)
	if _, err := f.st.ClaimStep(f.ctx, id, 0, lease("w1", at(30)), at(1)); err != nil {
		t.Fatalf("ClaimStep(%s): %v", id, err)
	}
}

// parkedFor creates run id of tenant at t0 and commits its step 0 with
// callIDs all suspended (replay) at now.
func (f *fixture) parkedFor(t *testing.T, id, tenant string, now time.Time, callIDs ...string) {
	t.Helper()
	f.parkedAt(t, id, tenant, t0, now, callIDs...)
}

// parkedAt is parkedFor with the run created at created.
func (f *fixture) parkedAt(t *testing.T, id, tenant string, created, now time.Time, callIDs ...string) {
	t.Helper()
	f.createdAt(t, id, tenant, created)
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

// wantLive checks the live index holds exactly ids (ordered by id: the
// cases create their runs at one time).
func (f *fixture) wantLive(t *testing.T, ids ...string) {
	t.Helper()
	got, err := f.rdb.ZRange(f.ctx, f.prefix+":live", 0, -1).Result()
	slices.Sort(got)
	if err != nil || fmt.Sprint(got) != fmt.Sprint(ids) {
		t.Fatalf("live index = %v, %v; want %v", got, err, ids)
	}
}

// finishRun ends run id as done (cancelled) at 4s.
func (f *fixture) finishRun(t *testing.T, id string) {
	t.Helper()
	if _, err := f.st.FinishRun(f.ctx, id, pipeline.Termination{Reason: pipeline.ReasonCancelled}, at(4)); err != nil {
		t.Fatal(err)
	}
}

// wantRunIndex checks the run index of tenant holds exactly ids, oldest
// first.
func (f *fixture) wantRunIndex(t *testing.T, tenant string, ids ...string) {
	t.Helper()
	got, err := f.rdb.ZRange(f.ctx, f.prefix+":runs:t:"+tenant, 0, -1).Result()
	if err != nil || fmt.Sprint(got) != fmt.Sprint(ids) && len(got)+len(ids) > 0 {
		t.Fatalf("run index of %s = %v, %v; want %v", tenant, got, err, ids)
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

// A tenant's lists cost Redis what its own runs and calls cost, not what
// every tenant's do. With 300 runs of another tenant, each with a parked
// call, one tenant's list of its one pending call runs a handful of
// commands (one per call and run of the index of all, 600 and more, before
// tenants had indexes of their own), and its list of its runs, in pages of
// two, finds its two runs on the first page (which scanned the 20 newest
// runs of every tenant, all the other's, and came back empty).
func TestStore_a_tenants_lists_cost_its_own_runs_and_calls(t *testing.T) {
	rdb := testinfra.RedisServerClient(t)
	var commands atomic.Int64
	rdb.AddHook(countingHook{n: &commands})
	f := &fixture{st: store.New(rdb), rdb: rdb, prefix: store.DefaultPrefix, ctx: context.Background()}
	f.parkedAt(t, "small1", "small", t0, at(1), "c1")
	f.createdAt(t, "small2", "small", t0.Add(time.Millisecond))
	for i := range 300 { // created after small's: newer
		f.parkedAt(t, fmt.Sprintf("big%03d", i), "big", at(1).Add(time.Duration(i)*time.Millisecond), at(2), "c1")
	}
	for range 2 { // the first lists look whether what came before the tenants' indexes is in them
		commands.Store(0)
		wantPending(t, f, store.PendingFilter{Tenant: "small"}, "small1/c1")
	}
	if n := commands.Load(); n > 5 {
		t.Errorf("listing one tenant's one pending call ran %d commands", n)
	}
	for range 2 {
		commands.Store(0)
		runs, cursor, err := f.st.ListRuns(f.ctx, store.ListFilter{Tenant: "small", Limit: 2})
		if err != nil || len(runs) != 2 {
			t.Fatalf("small's first page of two = %v, cursor %q, %v", runIDs(runs), cursor, err)
		}
	}
	if n := commands.Load(); n > 5 {
		t.Errorf("listing one tenant's two runs ran %d commands", n)
	}
}

// A list of the running runs costs Redis what they cost, not what every
// kept run does: with 300 ended runs newer than the two running, its first
// page of two finds both (it scanned the 20 newest runs, all ended, and
// came back empty before there was a live index).
func TestStore_a_status_list_costs_the_live_runs(t *testing.T) {
	rdb := testinfra.RedisServerClient(t)
	var commands atomic.Int64
	rdb.AddHook(countingHook{n: &commands})
	f := &fixture{st: store.New(rdb), rdb: rdb, prefix: store.DefaultPrefix, ctx: context.Background()}
	f.createdAt(t, "live1", "", t0)
	f.createdAt(t, "live2", "", t0.Add(time.Millisecond))
	for i := range 300 { // created after the live ones: newer
		id := fmt.Sprintf("ended%03d", i)
		f.createdAt(t, id, "", at(1).Add(time.Duration(i)*time.Millisecond))
		f.finishRun(t, id)
		if err := f.st.MarkPublished(f.ctx, f.run(t, id), at(5)); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 { // the first list looks whether runs created before the live index are in it
		commands.Store(0)
		runs, _, err := f.st.ListRuns(f.ctx, store.ListFilter{Status: pipeline.RunRunning, Limit: 2})
		if err != nil || fmt.Sprint(runIDs(runs)) != "[live2 live1]" {
			t.Fatalf("the first page of two running runs = %v, %v", runIDs(runs), err)
		}
	}
	if n := commands.Load(); n > 5 {
		t.Errorf("listing two running runs ran %d commands", n)
	}
}

// The sweeper's trim of expired runs takes each out of its own tenant's
// run index: with fifty tenants, a batch of one tenant's runs is one ZREM
// of tenants' indexes, not fifty (ADR 0035).
func TestStore_a_trim_costs_the_tenants_of_the_runs_it_trims(t *testing.T) {
	rdb := testinfra.RedisServerClient(t)
	f := (&fixture{st: store.New(rdb), rdb: rdb, prefix: store.DefaultPrefix, ctx: context.Background()}).retaining(retention)
	for i := range 50 { // tenants with a run each, kept
		f.createdAt(t, fmt.Sprintf("k%02d", i), fmt.Sprintf("tenant%02d", i), t0)
	}
	for i := range 10 {
		id := fmt.Sprintf("a%02d", i)
		f.createdAt(t, id, "acme", t0)
		f.finishRun(t, id)
		if err := f.st.MarkPublished(f.ctx, f.run(t, id), at(5)); err != nil {
			t.Fatal(err)
		}
		f.del(t, slices.Collect(mapKeys(f.runKeys(t, id), f.prefix+":{"+id+"}:"))...)
	}
	var zrems atomic.Int64
	rdb.AddHook(countingHook{n: &zrems, only: "zrem"})
	if n, err := f.st.TrimRetired(f.ctx, at(5).Add(retention), 100); err != nil || n != 10 {
		t.Fatalf("TrimRetired = %d, %v; want the ten runs of acme", n, err)
	}
	f.wantRunIndex(t, "acme")
	f.wantRunIndex(t, "tenant07", "k07")
	// The run index, the live one, acme's, the schedule, the retired index
	// and the search index of the runs' agent.
	if n := zrems.Load(); n > 6 {
		t.Errorf("trimming ten runs of one tenant among fifty ran %d ZREMs", n)
	}
}

// Lists that come while the store adds the runs created before an index
// to it (a console polling every two seconds, during a walk of a million
// runs) wait for that walk rather than each walking again.
func TestStore_lists_during_an_index_walk_wait_for_it(t *testing.T) {
	rdb := testinfra.RedisServerClient(t)
	f := &fixture{st: store.New(rdb), rdb: rdb, prefix: store.DefaultPrefix, ctx: context.Background()}
	for i := range 50 {
		f.createdAt(t, fmt.Sprintf("r%02d", i), "", at(i))
	}
	f.del(t, f.prefix+":live", f.prefix+":live:indexed")
	var reads atomic.Int64
	rdb.AddHook(countingHook{n: &reads, only: "hget"})
	// Each walk's reads take a while (as a million runs' would), so the
	// other lists come while the first walks.
	rdb.AddHook(slowHook{only: "hget", d: 100 * time.Millisecond})
	upgraded := store.New(rdb)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if runs, _, err := upgraded.ListRuns(f.ctx, store.ListFilter{Status: pipeline.RunRunning, Limit: 100}); err != nil || len(runs) != 50 {
				t.Errorf("running runs = %d, %v", len(runs), err)
			}
		})
	}
	wg.Wait()
	if n := reads.Load(); n != 50 {
		t.Errorf("8 lists at once read the status of %d runs to fill the live index, want each of the 50 once", n)
	}
}

// slowHook holds the pipelines that hold a command named only for d.
type slowHook struct {
	only string
	d    time.Duration
}

func (h slowHook) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (h slowHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (h slowHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if slices.ContainsFunc(cmds, func(c redis.Cmder) bool { return c.Name() == h.only }) {
			time.Sleep(h.d)
		}
		return next(ctx, cmds)
	}
}

// countingHook counts the commands a client sends, those of pipelines too;
// only those named only when it is set.
type countingHook struct {
	n    *atomic.Int64
	only string
}

func (h countingHook) count(cmds ...redis.Cmder) {
	for _, c := range cmds {
		if h.only == "" || c.Name() == h.only {
			h.n.Add(1)
		}
	}
}

func (h countingHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h countingHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.count(cmd)
		return next(ctx, cmd)
	}
}

func (h countingHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.count(cmds...)
		return next(ctx, cmds)
	}
}
