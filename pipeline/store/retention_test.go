package store_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stepwise-run/stepwise/internal/tooling/testinfra"
	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/store"
)

// retention is the retention of the stores the retention cases use.
const retention = time.Hour

// retaining returns f with a store that keeps ended runs for retention.
func (f *fixture) retaining(r time.Duration) *fixture {
	g := *f
	g.st = store.New(f.rdb, store.WithPrefix(f.prefix), store.WithRetention(r))
	return &g
}

// runKeys returns the keys of run id that exist, by name suffix ("run",
// "call:c1", ...) with their time to live (-1: none).
func (f *fixture) runKeys(t *testing.T, id string) map[string]time.Duration {
	t.Helper()
	base := f.prefix + ":{" + id + "}:"
	out := map[string]time.Duration{}
	for _, k := range scanKeys(t, f.rdb, base+"*") {
		ttl, err := f.rdb.PTTL(f.ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		if ttl != -2 {
			out[k[len(base):]] = ttl
		}
	}
	return out
}

// scanKeys lists the keys matching pattern, on every primary of a cluster.
func scanKeys(t *testing.T, rdb redis.UniversalClient, pattern string) []string {
	t.Helper()
	ctx := context.Background()
	var keys []string
	var mu sync.Mutex // ForEachMaster scans the primaries at once
	scan := func(ctx context.Context, c *redis.Client) error {
		it := c.Scan(ctx, 0, pattern, 1000).Iterator()
		for it.Next(ctx) {
			mu.Lock()
			keys = append(keys, it.Val())
			mu.Unlock()
		}
		return it.Err()
	}
	var err error
	switch c := rdb.(type) {
	case *redis.ClusterClient:
		err = c.ForEachMaster(ctx, scan) // the keys of one run share a slot, but a pattern may not
	case *redis.Client:
		err = scan(ctx, c)
	default:
		t.Fatalf("scanKeys: a %T", rdb)
	}
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

// expiring checks that the run has exactly the keys named, each expiring
// within the retention.
func (f *fixture) expiring(t *testing.T, id string, names ...string) {
	t.Helper()
	got := f.runKeys(t, id)
	var have []string
	for name, ttl := range got {
		have = append(have, name)
		if ttl <= 0 || ttl > retention {
			t.Errorf("key %s of run %s lives %v, want (0, %v]", name, id, ttl, retention)
		}
	}
	slices.Sort(have)
	names = slices.Sorted(slices.Values(names)) // a copy: names may be a shared slice (everyKeyOfTwoSteps...)
	if !slices.Equal(have, names) {
		t.Errorf("keys of run %s = %v, want %v", id, have, names)
	}
}

// twoSteps takes run id through step 0 (calls c1, c2) to step 1 claimed by
// w1, with a held decision for a call that will never exist.
func (f *fixture) twoSteps(t *testing.T, id string) {
	t.Helper()
	f.committed(t, id, "c1", "c2")
	f.done(t, id, "c1")
	f.done(t, id, "c2")
	if _, _, err := f.st.EndStep(f.ctx, id, 0, store.StepEnd{
		ToolMessages: []pipeline.Message{{Role: pipeline.RoleTool, Content: "1"}, {Role: pipeline.RoleTool, Content: "2"}},
		State:        []pipeline.StateUpdate{{Key: "plugin.k", Value: []byte(`1`)}},
	}, at(5)); err != nil {
		t.Fatal(err)
	}
	if _, err := f.st.ClaimStep(f.ctx, id, 1, lease("w1", at(60)), at(6)); err != nil {
		t.Fatal(err)
	}
	if r := f.decide(t, id, store.Decision{ID: "d-early", CallID: "c9", Action: store.ActionResume}, at(6)); r.Outcome != store.DecisionHeld {
		t.Fatalf("decision = %+v, want held", r)
	}
}

// everyKeyOfTwoSteps are the keys of an ended twoSteps run: its step lists
// are gone (lib.lua's retire).
var everyKeyOfTwoSteps = []string{"run", "msgs", "events", "state", "held", "outcomes", "call:c1", "call:c2"}

var retentionCases = []contractCase{
	{"a_run_that_ends_with_its_step_expires_whole", func(t *testing.T, f *fixture) {
		f = f.retaining(retention)
		f.twoSteps(t, "r1")
		f.commit(t, "r1", 1, "w1", "c3")
		f.done(t, "r1", "c3")
		if _, _, err := f.st.EndStep(f.ctx, "r1", 1, store.StepEnd{
			ToolMessages: []pipeline.Message{{Role: pipeline.RoleTool, Content: "3"}},
			Finish:       &pipeline.Termination{Reason: pipeline.ReasonNaturalEnd},
		}, at(7)); err != nil {
			t.Fatal(err)
		}
		f.expiring(t, "r1", append(everyKeyOfTwoSteps, "call:c3")...)
		// Its calls are still there to read, found by its conversation.
		all, err := f.st.RunCalls(f.ctx, "r1")
		if err != nil || len(all) != 3 || all[0].ID != "c1" || all[1].ID != "c2" || all[2].ID != "c3" {
			t.Fatalf("RunCalls of the ended run = %+v, %v; want c1, c2, c3", all, err)
		}
		step0, err := f.st.StepCalls(f.ctx, "r1", 0)
		if err != nil || len(step0) != 2 || step0[0].ID != "c1" || step0[1].ID != "c2" {
			t.Fatalf("StepCalls(0) of the ended run = %+v, %v; want c1, c2", step0, err)
		}
		// Its event stream is rebuilt at its exact size (lib.lua, compact):
		// its entries and about 900 bytes of structure, where a stream node
		// is given 4 KB at once. miniredis knows no MEMORY USAGE.
		events := f.prefix + ":{r1}:events"
		if used, err := f.rdb.MemoryUsage(f.ctx, events, 0).Result(); err == nil {
			entries, err := f.rdb.XRange(f.ctx, events, "-", "+").Result()
			if err != nil {
				t.Fatal(err)
			}
			size := 0
			for _, e := range entries {
				size += len(e.ID)
				for name, v := range e.Values {
					size += len(name) + len(v.(string))
				}
			}
			if used > int64(size)+1200 {
				t.Errorf("the ended run's event stream takes %d bytes for %d of entries: not compacted", used, size)
			}
		}
		// A decision rejected after the end writes a key the run did not
		// have (its decision ids): it goes with the run.
		if err := f.st.DropHeld(f.ctx, "r1", "c9", "d-early", "run is done", at(8)); err != nil {
			t.Fatal(err)
		}
		if r := f.decide(t, "r1", store.Decision{ID: "d-late", CallID: "c3", Action: store.ActionResume}, at(8)); r.Outcome != store.DecisionRejected {
			t.Fatalf("decision = %+v, want rejected", r)
		}
		f.expiring(t, "r1", "run", "msgs", "events", "state", "decisions", "outcomes", "call:c1", "call:c2", "call:c3")
	}},
	{"a_finished_run_expires_whole", func(t *testing.T, f *fixture) {
		f = f.retaining(retention)
		f.twoSteps(t, "r1")
		if _, err := f.st.FinishRun(f.ctx, "r1", pipeline.Termination{Reason: pipeline.ReasonError, Detail: "boom"}, at(7)); err != nil {
			t.Fatal(err)
		}
		f.expiring(t, "r1", everyKeyOfTwoSteps...)
	}},
	{"a_cancelled_run_expires_whole", func(t *testing.T, f *fixture) {
		f = f.retaining(retention)
		f.twoSteps(t, "r1")
		if _, err := f.st.CancelRun(f.ctx, "r1", "", "me", "enough", at(7)); err != nil {
			t.Fatal(err)
		}
		// Cancelling rejects the held decision: its id is recorded, the
		// held hash is gone.
		f.expiring(t, "r1", "run", "msgs", "events", "state", "decisions", "outcomes", "call:c1", "call:c2")
	}},
	{"an_archiving_store_keeps_an_ended_run_until_it_is_archived", func(t *testing.T, f *fixture) {
		f.st = store.New(f.rdb, store.WithPrefix(f.prefix), store.WithRetention(retention), store.WithArchive())
		f.twoSteps(t, "r1")
		if _, err := f.st.FinishRun(f.ctx, "r1", pipeline.Termination{Reason: pipeline.ReasonError, Detail: "boom"}, at(7)); err != nil {
			t.Fatal(err)
		}
		keys := f.runKeys(t, "r1")
		for name, ttl := range keys {
			if ttl != -1 {
				t.Errorf("before its archiving, key %s lives %v, want for good", name, ttl)
			}
		}
		calls, err := f.st.RunCalls(f.ctx, "r1")
		if err != nil {
			t.Fatal(err)
		}
		ids := make([]string, len(calls))
		for i, c := range calls {
			ids[i] = c.ID
		}
		if err := f.st.Archived(f.ctx, "r1", ids); err != nil {
			t.Fatal(err)
		}
		f.expiring(t, "r1", everyKeyOfTwoSteps...)
	}},
	{"without_a_retention_an_ended_run_stays", func(t *testing.T, f *fixture) {
		f.twoSteps(t, "r1")
		if _, err := f.st.FinishRun(f.ctx, "r1", pipeline.Termination{Reason: pipeline.ReasonError}, at(7)); err != nil {
			t.Fatal(err)
		}
		for name, ttl := range f.runKeys(t, "r1") {
			if ttl != -1 {
				t.Errorf("key %s lives %v, want for good", name, ttl)
			}
		}
	}},
	{"a_running_run_does_not_expire", func(t *testing.T, f *fixture) {
		f = f.retaining(retention)
		f.twoSteps(t, "r1")
		for name, ttl := range f.runKeys(t, "r1") {
			if ttl != -1 {
				t.Errorf("key %s of a running run lives %v", name, ttl)
			}
		}
	}},
	{"deltas_leave_the_event_stream_when_their_turn_is_committed", func(t *testing.T, f *fixture) {
		f.claimed(t, "r1")
		run := f.prefix + ":{r1}:run"
		for _, d := range []string{"let ", "me ", "look"} {
			if err := f.st.AppendDelta(f.ctx, "r1", 0, "w1", d, at(1)); err != nil {
				t.Fatal(err)
			}
		}
		before := f.eventTypes(t, "r1")
		if n := countType(before, pipeline.EventTextDelta); n != 3 {
			t.Fatalf("events before the commit = %v, want 3 deltas", before)
		}
		f.commit(t, "r1", 0, "w1", "c1")
		after := f.eventTypes(t, "r1")
		if n := countType(after, pipeline.EventTextDelta); n != 0 {
			t.Fatalf("events after the commit = %v, want no delta", after)
		}
		want := slices.DeleteFunc(slices.Clone(before), func(e pipeline.EventType) bool { return e == pipeline.EventTextDelta })
		if !slices.Equal(after[:len(want)], want) || countType(after, pipeline.EventAssistantMessage) != 1 {
			t.Fatalf("events after the commit = %v, want %v then the commit's", after, want)
		}
		if msgs, _ := f.st.Messages(f.ctx, "r1"); msgs[len(msgs)-1].Content != "let me look" {
			t.Fatalf("messages = %+v, want the committed turn", msgs)
		}
		if run := f.run(t, "r1"); run.Step != 0 {
			t.Fatalf("run = %+v", run)
		}
		// The next step's deltas are trimmed by its own commit.
		if h, _ := f.rdb.HGet(f.ctx, run, "delta_from").Result(); h != "" {
			t.Fatalf("delta_from = %q after the commit", h)
		}
	}},
	{"published_runs_retire_and_leave_the_indexes_once_expired", func(t *testing.T, f *fixture) {
		f = f.retaining(retention)
		for _, id := range []string{"r1", "r2", "r3"} {
			f.created(t, id)
			if _, err := f.st.FinishRun(f.ctx, id, pipeline.Termination{Reason: pipeline.ReasonCancelled}, at(2)); err != nil {
				t.Fatal(err)
			}
			if err := f.st.MarkPublished(f.ctx, f.run(t, id), at(3)); err != nil {
				t.Fatal(err)
			}
		}
		f.created(t, "r4") // still running: stays listed
		if n, err := f.st.TrimRetired(f.ctx, at(3), 100); err != nil || n != 0 {
			t.Fatalf("TrimRetired before expiry = %d, %v", n, err)
		}
		// r1 expires (its keys are deleted, as an expiry would), r2 was
		// made to live for good, r3 still lives.
		if err := f.rdb.Del(f.ctx, slices.Collect(mapKeys(f.runKeys(t, "r1"), f.prefix+":{r1}:"))...).Err(); err != nil {
			t.Fatal(err)
		}
		if err := f.rdb.Persist(f.ctx, f.prefix+":{r2}:run").Err(); err != nil {
			t.Fatal(err)
		}
		due := at(3).Add(retention)
		if n, err := f.st.TrimRetired(f.ctx, due, 100); err != nil || n != 1 {
			t.Fatalf("TrimRetired = %d, %v; want r1 trimmed", n, err)
		}
		runs, _, err := f.st.ListRuns(f.ctx, store.ListFilter{})
		if err != nil {
			t.Fatal(err)
		}
		if ids := runIDs(runs); !slices.Equal(ids, []string{"r4", "r3", "r2"}) {
			t.Fatalf("listed runs = %v, want r1 gone", ids)
		}
		retired, err := f.rdb.ZRangeWithScores(f.ctx, f.prefix+":retired:owned", 0, -1).Result()
		if err != nil || len(retired) != 1 || retired[0].Member != "r3{" || retired[0].Score <= float64(due.UnixMilli()) {
			t.Fatalf("retired index = %v, %v; want only r3, rescored after %v", retired, err, due)
		}
		// A late mark of an expired run does not bring it back.
		if err := f.st.MarkPublished(f.ctx, pipeline.Run{ID: "r1"}, due); err != nil {
			t.Fatal(err)
		}
		if keys := f.runKeys(t, "r1"); len(keys) != 0 {
			t.Fatalf("a late mark recreated %v", keys)
		}
		if _, err := f.st.GetRun(f.ctx, "r1"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("GetRun of an expired run = %v", err)
		}
	}},
	{"a_forgotten_run_leaves_every_index", func(t *testing.T, f *fixture) {
		f = f.retaining(retention)
		f.created(t, "r1")
		if _, err := f.st.FinishRun(f.ctx, "r1", pipeline.Termination{Reason: pipeline.ReasonCancelled}, at(2)); err != nil {
			t.Fatal(err)
		}
		if err := f.st.MarkPublished(f.ctx, f.run(t, "r1"), at(3)); err != nil {
			t.Fatal(err)
		}
		if err := f.st.ScheduleSweep(f.ctx, "r1", at(4)); err != nil {
			t.Fatal(err)
		}
		if err := f.st.Forget(f.ctx, "r1"); err != nil {
			t.Fatal(err)
		}
		for _, index := range []string{"runs", "active", "retired", "retired:owned"} {
			if n, _ := f.rdb.ZCard(f.ctx, f.prefix+":"+index).Result(); n != 0 {
				t.Errorf("%s holds %d entries", index, n)
			}
		}
	}},
}

func countType(evs []pipeline.EventType, typ pipeline.EventType) int {
	n := 0
	for _, e := range evs {
		if e == typ {
			n++
		}
	}
	return n
}

func mapKeys(m map[string]time.Duration, prefix string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(prefix + k) {
				return
			}
		}
	}
}

func runIDs(runs []pipeline.Run) []string {
	out := make([]string, len(runs))
	for i, r := range runs {
		out[i] = r.ID
	}
	return out
}

// A Redis whose user may DUMP but not RESTORE (an ACL) cannot compact an
// ended run's event stream: the stream is left as it is, and still goes
// with the run.
func TestStore_a_stream_that_cannot_be_restored_still_expires_with_its_run(t *testing.T) {
	admin := testinfra.RedisServerClient(t)
	ctx := context.Background()
	if err := admin.Do(ctx, "ACL", "SETUSER", "norestore", "on", ">pw", "~*", "+@all", "-restore").Err(); err != nil {
		t.Fatal(err)
	}
	opts := *admin.Options()
	opts.Username, opts.Password = "norestore", "pw"
	rdb := redis.NewClient(&opts)
	t.Cleanup(func() { _ = rdb.Close() })
	f := &fixture{st: store.New(rdb, store.WithPrefix("acl"), store.WithRetention(retention)), rdb: rdb, prefix: "acl", ctx: ctx}
	f.twoSteps(t, "r1")
	if _, err := f.st.FinishRun(f.ctx, "r1", pipeline.Termination{Reason: pipeline.ReasonError, Detail: "boom"}, at(7)); err != nil {
		t.Fatal(err)
	}
	f.expiring(t, "r1", everyKeyOfTwoSteps...)
}
