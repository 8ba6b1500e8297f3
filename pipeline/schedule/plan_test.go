package schedule_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stepwise-run/stepwise/pipeline/schedule"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func timer(t *testing.T, spec schedule.Spec) *schedule.Timer {
	t.Helper()
	tm, err := schedule.NewTimer(spec)
	if err != nil {
		t.Fatalf("timer %+v: %v", spec, err)
	}
	return tm
}

func minutes(ms ...int) []time.Time {
	var out []time.Time
	for _, m := range ms {
		out = append(out, t0.Add(time.Duration(m)*time.Minute))
	}
	return out
}

func TestPlan_fires_the_ticks_each_overlap_policy_and_the_catchup_window_allow(t *testing.T) {
	every := func(o schedule.Overlap, window time.Duration) schedule.Spec {
		return schedule.Spec{Every: time.Minute, Overlap: o, CatchupWindow: window}
	}
	for _, tc := range []struct {
		name     string
		spec     schedule.Spec
		state    schedule.State
		now      time.Time
		fire     []time.Time
		buffered time.Time
		next     time.Time
	}{
		{"nothing due yet", every(schedule.OverlapSkip, 0), schedule.State{Next: minutes(1)[0]}, t0, nil, time.Time{}, minutes(1)[0]},
		{"one tick due", every(schedule.OverlapSkip, 0), schedule.State{Next: t0}, t0, minutes(0), time.Time{}, minutes(1)[0]},
		{"skip drops a tick while the last run is busy", every(schedule.OverlapSkip, 0), schedule.State{Next: t0, Busy: true}, t0, nil, time.Time{}, minutes(1)[0]},
		{"skip catches up with the latest missed tick only", every(schedule.OverlapSkip, 0), schedule.State{Next: t0}, minutes(3)[0], minutes(3), time.Time{}, minutes(4)[0]},
		{"allow_all catches up with each missed tick", every(schedule.OverlapAllowAll, 0), schedule.State{Next: t0, Busy: true}, minutes(3)[0], minutes(0, 1, 2, 3), time.Time{}, minutes(4)[0]},
		{"the catch-up window drops older ticks", every(schedule.OverlapAllowAll, 90*time.Second), schedule.State{Next: t0}, minutes(3)[0], minutes(2, 3), time.Time{}, minutes(4)[0]},
		{"a window that holds no missed tick fires none", every(schedule.OverlapAllowAll, 10*time.Second), schedule.State{Next: t0}, minutes(3)[0].Add(30 * time.Second), nil, time.Time{}, minutes(4)[0]},
		{"buffer_one keeps a tick while the last run is busy", every(schedule.OverlapBufferOne, 0), schedule.State{Next: t0, Busy: true}, t0, nil, t0, minutes(1)[0]},
		{"buffer_one keeps the first waiting tick, not a later one", every(schedule.OverlapBufferOne, 0), schedule.State{Next: minutes(1)[0], Buffered: t0, Busy: true}, minutes(1)[0], nil, t0, minutes(2)[0]},
		{"buffer_one starts the waiting tick when the last run is done", every(schedule.OverlapBufferOne, 0), schedule.State{Next: minutes(1)[0], Buffered: t0}, t0.Add(30 * time.Second), minutes(0), time.Time{}, minutes(1)[0]},
		{"buffer_one starts the waiting tick and keeps the due one", every(schedule.OverlapBufferOne, 0), schedule.State{Next: minutes(1)[0], Buffered: t0}, minutes(1)[0], minutes(0), minutes(1)[0], minutes(2)[0]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := timer(t, tc.spec).Plan(tc.state, tc.now)
			if !slices.EqualFunc(p.Fire, tc.fire, time.Time.Equal) || !p.Buffered.Equal(tc.buffered) || !p.Next.Equal(tc.next) {
				t.Errorf("plan = fire %v, buffered %v, next %v; want fire %v, buffered %v, next %v", p.Fire, p.Buffered, p.Next, tc.fire, tc.buffered, tc.next)
			}
		})
	}
}

func TestPlan_allow_all_starts_at_most_MaxCatchup_missed_ticks_the_latest(t *testing.T) {
	tm := timer(t, schedule.Spec{Every: time.Second, Overlap: schedule.OverlapAllowAll})
	now := t0.Add(time.Hour)
	p := tm.Plan(schedule.State{Next: t0}, now)
	if len(p.Fire) != schedule.MaxCatchup || !p.Fire[len(p.Fire)-1].Equal(now) {
		t.Errorf("fired %d ticks ending %v, want %d ending %v", len(p.Fire), p.Fire[len(p.Fire)-1], schedule.MaxCatchup, now)
	}
}

func TestNext_reads_cron_in_the_schedules_time_zone_and_every_from_the_epoch(t *testing.T) {
	paris := timer(t, schedule.Spec{Cron: "0 9 * * *", Timezone: "Europe/Paris"})
	if got, want := paris.Next(t0), time.Date(2026, 3, 2, 8, 0, 0, 0, time.UTC); !got.Equal(want) {
		t.Errorf("9:00 in Paris after %v = %v, want %v", t0, got, want)
	}
	// Paris moves to summer time on 2026-03-29: 9:00 is 7:00 UTC then.
	if got, want := paris.Next(time.Date(2026, 3, 29, 0, 0, 0, 0, time.UTC)), time.Date(2026, 3, 29, 7, 0, 0, 0, time.UTC); !got.Equal(want) {
		t.Errorf("9:00 in Paris on summer time = %v, want %v", got, want)
	}
	every := timer(t, schedule.Spec{Every: 90 * time.Second})
	if got, want := every.Next(time.UnixMilli(100_000)), time.UnixMilli(180_000); !got.Equal(want) {
		t.Errorf("every 90s after 100s = %v, want %v", got, want)
	}
}

func TestNewTimer_refuses_each_bad_spec_with_a_reason(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec schedule.Spec
		want string
	}{
		{"neither", schedule.Spec{}, `give "cron" or "every"`},
		{"both", schedule.Spec{Cron: "* * * * *", Every: time.Minute}, "not both"},
		{"too short", schedule.Spec{Every: time.Millisecond}, "at least 1s"},
		{"bad cron", schedule.Spec{Cron: "61 * * * *"}, `cron "61 * * * *"`},
		{"six fields", schedule.Spec{Cron: "0 0 * * * *"}, `cron "0 0 * * * *"`},
		{"@every", schedule.Spec{Cron: "@every 1m"}, `"every"`},
		{"TZ in cron", schedule.Spec{Cron: "CRON_TZ=UTC 0 * * * *"}, `"timezone"`},
		{"bad zone", schedule.Spec{Cron: "@hourly", Timezone: "Mars/Olympus"}, `timezone "Mars/Olympus"`},
		{"bad overlap", schedule.Spec{Every: time.Minute, Overlap: "queue"}, `overlap "queue"`},
		{"negative window", schedule.Spec{Every: time.Minute, CatchupWindow: -time.Second}, "negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := schedule.NewTimer(tc.spec)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v, want one mentioning %s", err, tc.want)
			}
		})
	}
}

func TestLookAt_is_at_once_for_a_firing_never_while_paused_and_else_the_next_tick_or_a_poll(t *testing.T) {
	next, now := minutes(5)[0], t0
	for _, tc := range []struct {
		name string
		sc   schedule.Schedule
		want time.Time
	}{
		{"a firing to complete", schedule.Schedule{Next: next, Paused: true, Firing: []schedule.Firing{{RunID: "r"}}}, now},
		{"paused", schedule.Schedule{Next: next, Paused: true}, time.Time{}},
		{"a tick waiting", schedule.Schedule{Next: next, Buffered: t0}, now.Add(time.Second)},
		{"nothing to do", schedule.Schedule{Next: next}, next},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.sc.LookAt(now, time.Second); !got.Equal(tc.want) {
				t.Errorf("look at %v, want %v", got, tc.want)
			}
		})
	}
}

func TestPlan_a_cron_that_matches_no_time_fires_nothing_and_has_no_next_tick(t *testing.T) {
	p := timer(t, schedule.Spec{Cron: "0 0 30 2 *"}).Plan(schedule.State{Next: t0}, t0.Add(time.Hour))
	if len(p.Fire) != 1 || !p.Next.IsZero() {
		t.Errorf("plan %+v, want the one due tick fired and no next tick", p)
	}
}
