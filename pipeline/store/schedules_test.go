package store_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/schedule"
	"github.com/stepwise-run/stepwise/pipeline/store"
)

// newSchedule is a schedule every minute of tenant acme, its next tick at
// next.
func newSchedule(id string, next time.Time) schedule.Schedule {
	return schedule.Schedule{
		ID: id, Tenant: "acme", Next: next,
		Spec: schedule.Spec{Every: time.Minute, Overlap: schedule.OverlapSkip, CatchupWindow: time.Hour},
		Run:  schedule.Template{Agent: "assistant", Input: []pipeline.Message{{Role: pipeline.RoleUser, Content: "tick"}}, RequestHash: "h"},
	}
}

var scheduleCases = []contractCase{
	{"a_schedule_created_again_is_a_replay_and_with_another_spec_a_conflict", func(t *testing.T, f *fixture) {
		sc := newSchedule("s1", at(60))
		got, created, err := f.st.CreateSchedule(f.ctx, sc, at(0))
		if err != nil || !created || got.Rev != 1 || got.Tenant != "acme" || !got.Next.Equal(at(60)) || got.Run.Input[0].Content != "tick" {
			t.Fatalf("create: %+v, %v, %v", got, created, err)
		}
		if again, created, err := f.st.CreateSchedule(f.ctx, sc, at(5)); err != nil || created || again.Rev != 1 {
			t.Fatalf("replay: %+v, %v, %v", again, created, err)
		}
		other := sc
		other.Spec.Every = time.Hour
		if _, _, err := f.st.CreateSchedule(f.ctx, other, at(5)); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("another spec: %v, want ErrConflict", err)
		}
	}},
	{"a_schedule_write_from_a_stale_read_is_refused", func(t *testing.T, f *fixture) {
		read, _, err := f.st.CreateSchedule(f.ctx, newSchedule("s1", at(60)), at(0))
		if err != nil {
			t.Fatal(err)
		}
		first := read
		first.Firing = []schedule.Firing{schedule.FiringOf("s1", at(60), false)}
		got, written, err := f.st.PutSchedule(f.ctx, first, at(60))
		if err != nil || !written || got.Rev != 2 || len(got.Firing) != 1 || got.Firing[0].RunID != first.Firing[0].RunID {
			t.Fatalf("first write: %+v, %v, %v", got, written, err)
		}
		second := read
		second.Next = at(120)
		got, written, err = f.st.PutSchedule(f.ctx, second, at(120))
		if err != nil || written || got.Rev != 2 || len(got.Firing) != 1 {
			t.Fatalf("a write from the same read: %+v, written %v, %v; want refused, the first write's record returned", got, written, err)
		}
	}},
	{"due_schedules_hands_out_each_once_per_period_and_never_a_paused_or_deleted_one", func(t *testing.T, f *fixture) {
		for id, sec := range map[string]int{"s1": 10, "s2": 20, "s3": 30} {
			if _, _, err := f.st.CreateSchedule(f.ctx, newSchedule(id, at(sec)), at(0)); err != nil {
				t.Fatal(err)
			}
		}
		paused, err := f.st.GetSchedule(f.ctx, "s2")
		if err != nil {
			t.Fatal(err)
		}
		paused.Paused = true
		if _, written, err := f.st.PutSchedule(f.ctx, paused, paused.LookAt(at(20), 0)); err != nil || !written {
			t.Fatalf("pause: %v, %v", written, err)
		}
		if err := f.st.DeleteSchedule(f.ctx, "s3"); err != nil {
			t.Fatal(err)
		}
		due := func(now, recheck int) []string {
			t.Helper()
			ids, err := f.st.DueSchedules(f.ctx, at(now), 10, at(recheck))
			if err != nil {
				t.Fatal(err)
			}
			return ids
		}
		if got := due(40, 100); !slices.Equal(got, []string{"s1"}) {
			t.Errorf("due at 40s = %v, want s1 alone", got)
		}
		if got := due(40, 100); len(got) != 0 {
			t.Errorf("handed out again in the same period: %v", got)
		}
		all, err := f.st.ListSchedules(f.ctx)
		if err != nil || len(all) != 2 || all[0].ID != "s1" || !all[1].Paused {
			t.Errorf("list: %+v, %v; want s1 and s2 paused", all, err)
		}
		if _, err := f.st.GetSchedule(f.ctx, "s3"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("a deleted schedule: %v, want ErrNotFound", err)
		}
	}},
}
