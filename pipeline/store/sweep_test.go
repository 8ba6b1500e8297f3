package store_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/stepwise-run/stepwise/pipeline"
)

var sweepCases = []contractCase{
	{"due_runs_hands_a_run_out_once_per_period", func(t *testing.T, f *fixture) {
		for id, sec := range map[string]int{"r1": 0, "r2": 10, "r3": 20} {
			if err := f.st.ScheduleSweep(f.ctx, id, at(sec)); err != nil {
				t.Fatal(err)
			}
		}
		due := func(now, recheck int) []string {
			t.Helper()
			ids, err := f.st.DueRuns(f.ctx, at(now), 10, at(recheck))
			if err != nil {
				t.Fatal(err)
			}
			return ids
		}
		if got := due(10, 40); !slices.Equal(got, []string{"r1", "r2"}) {
			t.Fatalf("due at 10s = %v", got)
		}
		if got := due(10, 40); len(got) != 0 {
			t.Fatalf("handed out again in the same period: %v", got)
		}
		if got := due(39, 70); !slices.Equal(got, []string{"r3"}) {
			t.Fatalf("due at 39s = %v", got)
		}
		if got := due(40, 70); !slices.Equal(got, []string{"r1", "r2"}) {
			t.Fatalf("due again at the recheck = %v", got)
		}
	}},
	{"a_started_run_is_listed_and_due_and_a_replay_keeps_its_place", func(t *testing.T, f *fixture) {
		if _, created, err := f.st.StartRun(f.ctx, newRun("r1"), input, at(30), t0); err != nil || !created {
			t.Fatalf("StartRun = %v, %v", created, err)
		}
		if got, _ := f.st.DueRuns(f.ctx, at(29), 10, at(90)); len(got) != 0 {
			t.Fatalf("due before its first sweep: %v", got)
		}

		// A replay reschedules the sweep and keeps its place in the list.
		if _, created, err := f.st.StartRun(f.ctx, newRun("r1"), input, at(40), at(5)); err != nil || created {
			t.Fatalf("StartRun replay = %v, %v", created, err)
		}
		if got, _ := f.st.DueRuns(f.ctx, at(30), 10, at(90)); len(got) != 0 {
			t.Fatalf("due at its first schedule after the replay moved it: %v", got)
		}
		if got, _ := f.st.DueRuns(f.ctx, at(40), 10, at(90)); !slices.Equal(got, []string{"r1"}) {
			t.Fatalf("DueRuns = %v", got)
		}
		if score, _ := f.rdb.ZScore(f.ctx, f.prefix+":runs", "r1").Result(); score != float64(t0.UnixMilli()) {
			t.Fatalf("listed at %v, want its creation %v", score, t0.UnixMilli())
		}
	}},
	{"a_forgotten_run_is_no_longer_due", func(t *testing.T, f *fixture) {
		for _, id := range []string{"r1", "r2"} {
			if err := f.st.ScheduleSweep(f.ctx, id, at(0)); err != nil {
				t.Fatal(err)
			}
		}
		if err := f.st.Forget(f.ctx, "r1"); err != nil {
			t.Fatal(err)
		}
		if err := f.st.Forget(f.ctx, "never-scheduled"); err != nil {
			t.Fatal(err)
		}
		got, err := f.st.DueRuns(f.ctx, at(1), 10, at(60))
		if err != nil || !slices.Equal(got, []string{"r2"}) {
			t.Fatalf("DueRuns = %v, %v", got, err)
		}
	}},
	{"due_runs_respects_its_limit", func(t *testing.T, f *fixture) {
		for i := range 5 {
			if err := f.st.ScheduleSweep(f.ctx, fmt.Sprintf("r%d", i), at(i)); err != nil {
				t.Fatal(err)
			}
		}
		got, err := f.st.DueRuns(f.ctx, at(10), 2, at(100))
		if err != nil || !slices.Equal(got, []string{"r0", "r1"}) {
			t.Fatalf("DueRuns = %v, %v", got, err)
		}
	}},
	{"concurrent_sweepers_never_take_the_same_run", func(t *testing.T, f *fixture) {
		const runs, sweepers = 40, 4
		for i := range runs {
			if err := f.st.ScheduleSweep(f.ctx, fmt.Sprintf("r%d", i), at(0)); err != nil {
				t.Fatal(err)
			}
		}
		var mu sync.Mutex
		var wg sync.WaitGroup
		seen := map[string]int{}
		for range sweepers {
			wg.Go(func() {
				for range runs { // bounded: a broken DueRuns must fail, not hang
					ids, err := f.st.DueRuns(f.ctx, at(1), 3, at(60))
					if err != nil {
						t.Error(err)
						return
					}
					if len(ids) == 0 {
						return
					}
					mu.Lock()
					for _, id := range ids {
						seen[id]++
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if len(seen) != runs {
			t.Fatalf("%d runs handed out, want %d", len(seen), runs)
		}
		for id, n := range seen {
			if n != 1 {
				t.Fatalf("run %s handed out %d times", id, n)
			}
		}
	}},
}

var outboxCases = []contractCase{
	{"a_done_run_stays_due_until_its_result_is_marked_published", func(t *testing.T, f *fixture) {
		f.created(t, "r1")
		if err := f.st.ScheduleSweep(f.ctx, "r1", at(10)); err != nil {
			t.Fatal(err)
		}
		run, err := f.st.FinishRun(f.ctx, "r1", pipeline.Termination{Reason: pipeline.ReasonCancelled}, at(2))
		if err != nil || run.Published {
			t.Fatalf("FinishRun = %+v, %v", run, err)
		}
		ids, err := f.st.DueRuns(f.ctx, at(20), 10, at(50))
		if err != nil || len(ids) != 1 {
			t.Fatalf("a done run whose result is not out must stay due: %v, %v", ids, err)
		}
		if err := f.st.MarkPublished(f.ctx, f.run(t, "r1"), at(30)); err != nil {
			t.Fatal(err)
		}
		if run := f.run(t, "r1"); !run.Published {
			t.Fatalf("run = %+v", run)
		}
		if ids, _ := f.st.DueRuns(f.ctx, at(100), 10, at(150)); len(ids) != 0 {
			t.Fatalf("a published run is still due: %v", ids)
		}
	}},
}
