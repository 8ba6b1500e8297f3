package scheduler_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stepwise-run/stepwise/internal/tooling/testinfra"
	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/schedule"
	"github.com/stepwise-run/stepwise/pipeline/scheduler"
	"github.com/stepwise-run/stepwise/pipeline/store"
)

// clock is a test's time, moved by hand.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) set(t time.Time) { c.mu.Lock(); defer c.mu.Unlock(); c.now = t }

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// minute is the i-th minute after t0.
func minute(i int) time.Time { return t0.Add(time.Duration(i) * time.Minute) }

// fixture is a store on a Redis of the test's own and two firers, as two
// step workers' sweepers, on one clock.
type fixture struct {
	st     *store.Store
	clock  *clock
	firers []*scheduler.Firer
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{st: store.New(testinfra.RedisClient(t)), clock: &clock{now: t0}}
	for range 2 {
		f.firers = append(f.firers, &scheduler.Firer{Store: f.st, Now: f.clock.Now, Poll: time.Second})
	}
	return f
}

// create writes a schedule every minute with overlap o, as the gateway
// does at t0.
func (f *fixture) create(t *testing.T, id string, o schedule.Overlap) {
	t.Helper()
	tm, err := schedule.NewTimer(schedule.Spec{Every: time.Minute, Overlap: o})
	if err != nil {
		t.Fatal(err)
	}
	sc := schedule.Schedule{ID: id, Tenant: pipeline.DefaultTenant, Spec: tm.Spec(), Next: tm.Next(t0),
		Run: schedule.Template{Agent: "assistant", Input: []pipeline.Message{{Role: pipeline.RoleUser, Content: "tick"}}, RequestHash: "h"}}
	if _, _, err := f.st.CreateSchedule(context.Background(), sc, t0); err != nil {
		t.Fatal(err)
	}
}

// passAt runs both firers' passes at once at `at`, then ends every run
// they started (as if each finished at once).
func (f *fixture) passAt(t *testing.T, at time.Time) {
	t.Helper()
	f.clock.set(at)
	var wg sync.WaitGroup
	for _, fr := range f.firers {
		wg.Go(func() {
			if _, err := fr.Pass(context.Background(), time.Minute); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	runs, _, err := f.st.ListRuns(context.Background(), store.ListFilter{Limit: 500})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range runs {
		if r.Status != pipeline.RunDone {
			if _, err := f.st.FinishRun(context.Background(), r.ID, pipeline.Termination{Reason: pipeline.ReasonNaturalEnd}, at); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// ticks lists the ticks of the runs schedule id started, in order, as
// minutes after t0.
func (f *fixture) ticks(t *testing.T, id string) []int {
	t.Helper()
	runs, _, err := f.st.ListRuns(context.Background(), store.ListFilter{Limit: 500})
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, r := range runs {
		if r.ScheduleID == id {
			if r.ID != schedule.FiringOf(id, r.TickAt, false).RunID {
				t.Errorf("run %s of tick %s", r.ID, r.TickAt)
			}
			out = append(out, int(r.TickAt.Sub(t0)/time.Minute))
		}
	}
	slices.Sort(out)
	return out
}

// Two firers look every minute, then not for three minutes (a stop), then
// again: each tick before the stop started one run; after it, allow_all
// made up each missed tick and skip only the latest.
func TestFirer_two_firers_fire_each_tick_once_and_catch_up_as_the_overlap_says(t *testing.T) {
	f := newFixture(t)
	f.create(t, "all", schedule.OverlapAllowAll)
	f.create(t, "latest", schedule.OverlapSkip)
	for _, m := range []int{1, 2} {
		f.passAt(t, minute(m).Add(time.Second))
	}
	f.passAt(t, minute(5).Add(10*time.Second)) // minutes 3, 4 and 5 came while nobody looked
	f.passAt(t, minute(6))
	for id, want := range map[string][]int{"all": {1, 2, 3, 4, 5, 6}, "latest": {1, 2, 5, 6}} {
		if got := f.ticks(t, id); !slices.Equal(got, want) {
			t.Errorf("schedule %s started the runs of minutes %v, want %v", id, got, want)
		}
	}
	for _, id := range []string{"all", "latest"} {
		sc, err := f.st.GetSchedule(context.Background(), id)
		if err != nil || len(sc.Firing) != 0 || !sc.Next.Equal(minute(7)) {
			t.Errorf("schedule %s: firing %v, next %s, %v; want none and minute 7", id, sc.Firing, sc.Next, err)
		}
	}
}

// A paused schedule fires nothing; resumed, it fires from its next tick
// on, the ticks of the pause not made up. A trigger fires at once.
func TestFirer_a_paused_schedule_fires_nothing_and_a_trigger_fires_at_once(t *testing.T) {
	f := newFixture(t)
	f.create(t, "s", schedule.OverlapAllowAll)
	ctx := context.Background()
	sc, err := f.st.GetSchedule(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	sc.Paused = true
	if _, written, err := f.st.PutSchedule(ctx, sc, sc.LookAt(t0, 0)); err != nil || !written {
		t.Fatalf("pause: %v %v", written, err)
	}
	f.passAt(t, minute(3))
	if got := f.ticks(t, "s"); len(got) != 0 {
		t.Errorf("a paused schedule fired minutes %v", got)
	}
	f.clock.set(minute(3).Add(30 * time.Second))
	runID, err := f.firers[0].Trigger(ctx, "s", "")
	if err != nil || runID != fmt.Sprintf("s-now-%d", minute(3).Add(30*time.Second).UnixMilli()) {
		t.Fatalf("trigger: %q, %v", runID, err)
	}
	if _, err := f.st.GetRun(ctx, runID); err != nil {
		t.Errorf("the triggered run: %v", err)
	}
}

// A trigger that names its run is idempotent: the same trigger again, at
// once or later and from another firer, answers with the one run it
// started; a run the schedule did not start is a conflict.
func TestFirer_a_trigger_that_names_its_run_starts_it_once(t *testing.T) {
	f := newFixture(t)
	f.create(t, "s", schedule.OverlapAllowAll)
	ctx := context.Background()
	for i, fr := range []*scheduler.Firer{f.firers[0], f.firers[1], f.firers[0]} {
		f.clock.set(t0.Add(time.Duration(i) * time.Second))
		runID, err := fr.Trigger(ctx, "s", "s-manual-1")
		if err != nil || runID != "s-manual-1" {
			t.Fatalf("trigger %d: %q, %v", i, runID, err)
		}
	}
	runs, _, err := f.st.ListRuns(ctx, store.ListFilter{Limit: 500})
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 1 || runs[0].ID != "s-manual-1" || runs[0].ScheduleID != "s" || !runs[0].TickAt.Equal(t0) {
		t.Errorf("three triggers of run s-manual-1 left runs %+v, want that one run of tick t0", runs)
	}
	other := pipeline.Run{ID: "other", Agent: "assistant", Tenant: pipeline.DefaultTenant}
	if _, _, err := f.st.StartRun(ctx, other, []pipeline.Message{{Role: pipeline.RoleUser, Content: "hi"}}, t0, t0); err != nil {
		t.Fatal(err)
	}
	if _, err := f.firers[0].Trigger(ctx, "s", "other"); !errors.Is(err, store.ErrConflict) {
		t.Errorf("a trigger naming a run the schedule did not start: %v, want store.ErrConflict", err)
	}
}
