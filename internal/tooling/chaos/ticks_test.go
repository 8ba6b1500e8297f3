package chaos

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestCountTicks_each_tick_between_creation_and_pause_fires_exactly_once(t *testing.T) {
	t0 := time.Unix(1_795_867_290, 0)
	every1s := func() *tickSchedule {
		return &tickSchedule{id: "s1", every: time.Second, overlap: overlapAllowAll, first: t0, until: t0.Add(5 * time.Second)}
	}
	every2s := func() *tickSchedule {
		return &tickSchedule{id: "s2", every: 2 * time.Second, overlap: overlapSkip, first: t0, until: t0.Add(6 * time.Second)}
	}
	run := func(s *tickSchedule, k int) runSummary {
		tick := s.first.Add(time.Duration(k) * s.every)
		return runSummary{RunID: fmt.Sprintf("%s-%d", s.id, tick.Unix()), ScheduleID: s.id, TickAt: tick}
	}
	all := func(s *tickSchedule, n int) []runSummary {
		var out []runSummary
		for k := range n {
			out = append(out, run(s, k))
		}
		return out
	}
	cases := map[string]struct {
		runs    func(a, b *tickSchedule) []runSummary
		want    TickFigures
		problem string // in the first problem; "" for none
	}{
		"every tick once, one more after the pause's read": {
			runs: func(a, b *tickSchedule) []runSummary { return append(all(a, 6), all(b, 3)...) },
			want: TickFigures{Expected: 5, Fired: 9},
		},
		"a tick missed": {
			runs: func(a, b *tickSchedule) []runSummary {
				r := all(a, 5)
				return append(append(r[:2], r[3:]...), all(b, 3)...)
			},
			want:    TickFigures{Expected: 5, Fired: 7, Missed: 1},
			problem: "the tick 2026-11-28T12:01:32Z started no run",
		},
		"a tick doubled under another id": {
			runs: func(a, b *tickSchedule) []runSummary {
				r := append(all(a, 5), all(b, 3)...)
				twice := run(a, 1)
				twice.RunID += "-again"
				return append(r, twice)
			},
			want:    TickFigures{Expected: 5, Fired: 8, Doubled: 1},
			problem: "started 2 runs",
		},
		"a tick the skip schedule skipped": {
			runs: func(a, b *tickSchedule) []runSummary { return append(all(a, 5), run(b, 0), run(b, 2)) },
			want: TickFigures{Expected: 5, Fired: 7, Skipped: 1},
		},
		"a run off the schedule's grid": {
			runs: func(a, b *tickSchedule) []runSummary {
				off := runSummary{RunID: fmt.Sprintf("s2-%d", t0.Unix()+1), ScheduleID: "s2", TickAt: t0.Add(time.Second)}
				return append(append(all(a, 5), all(b, 3)...), off)
			},
			want:    TickFigures{Expected: 5, Fired: 9},
			problem: "not one of its ticks",
		},
		"another schedule's runs": {
			runs: func(a, b *tickSchedule) []runSummary {
				other := runSummary{RunID: "x-1", ScheduleID: "x", TickAt: t0}
				return append(append(all(a, 5), all(b, 3)...), other, runSummary{RunID: "plain"})
			},
			want: TickFigures{Expected: 5, Fired: 8},
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			a, b := every1s(), every2s()
			got, problems := countTicks([]*tickSchedule{a, b}, c.runs(a, b))
			if got != c.want {
				t.Errorf("figures %+v, want %+v", got, c.want)
			}
			switch {
			case c.problem == "" && len(problems) > 0:
				t.Errorf("problems %q, want none", problems)
			case c.problem != "" && (len(problems) == 0 || !strings.Contains(strings.Join(problems, "\n"), c.problem)):
				t.Errorf("problems %q, want one saying %q", problems, c.problem)
			}
		})
	}
}
