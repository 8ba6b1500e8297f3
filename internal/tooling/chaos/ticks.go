package chaos

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"time"
)

// Overlap policies of the schedules the harness makes.
const (
	overlapAllowAll = "allow_all"
	overlapSkip     = "skip"
)

// tickCatchup is the catch-up window of the harness's schedules: longer
// than any outage the churn makes (a killed step worker is back within
// a second, redis-server within a few), so no tick may be missed.
const tickCatchup = time.Minute

// tickInput is the user message of the runs the schedules start.
const tickInput = "Run the tick script."

// tickScript is the model of the runs the schedules start: one step of an
// echo and a sleep, then an answer. Short, so that a skip schedule's runs
// seldom overlap its next tick.
var tickScript = scriptModel{Provider: "script", Turns: []turn{
	{Text: "Ticking.", DelayMS: 30, ToolCalls: []toolCall{
		{Name: "echo", Arguments: map[string]any{"tick": true}},
		{Name: "sleep", Arguments: map[string]any{"ms": 25}},
	}},
	{Text: "Tick done."},
}}

// tickSchedule is one schedule the harness makes for the churn: created
// at its start, paused at its end, deleted once its runs are judged.
type tickSchedule struct {
	id      string
	every   time.Duration
	overlap string
	first   time.Time // the first tick, as the create answered
	until   time.Time // the next tick just before the pause: every tick before it was due
}

// newTickSchedules returns the schedules of an experiment: one every
// second that starts every tick (allow_all), which must fire each tick
// exactly once, and one every two seconds that skips a tick while its last
// run is not done, which must fire none twice.
func newTickSchedules(nonce string) []*tickSchedule {
	return []*tickSchedule{
		{id: "chaos-" + nonce + "-every1s", every: time.Second, overlap: overlapAllowAll},
		{id: "chaos-" + nonce + "-every2s", every: 2 * time.Second, overlap: overlapSkip},
	}
}

// create creates s on the gateway and keeps its first tick.
func (s *tickSchedule) create(ctx context.Context, gw *gateway) error {
	body := map[string]any{
		"schedule_id": s.id, "every": s.every.String(), "overlap": s.overlap, "catchup_window": tickCatchup.String(),
		"run": map[string]any{"agent": agentName, "input": tickInput, "model": tickScript},
	}
	v, err := gw.createSchedule(ctx, body)
	if err != nil {
		return fmt.Errorf("create schedule %s: %w", s.id, err)
	}
	s.first = v.NextTick
	return nil
}

// pause reads s's next tick, then pauses it.
func (s *tickSchedule) pause(ctx context.Context, gw *gateway) error {
	v, err := gw.schedule(ctx, s.id)
	if err != nil {
		return fmt.Errorf("read schedule %s: %w", s.id, err)
	}
	s.until = v.NextTick
	if err := gw.pauseSchedule(ctx, s.id); err != nil {
		return fmt.Errorf("pause schedule %s: %w", s.id, err)
	}
	return nil
}

// due lists the ticks of s from its first up to (not including) until.
func (s *tickSchedule) due() []time.Time {
	var out []time.Time
	for t := s.first; !t.IsZero() && t.Before(s.until); t = t.Add(s.every) {
		out = append(out, t)
	}
	return out
}

// TickFigures are what the schedules of an experiment did.
type TickFigures struct {
	// Expected counts the ticks of the allow_all schedule between its
	// creation and its pause: each must fire exactly once.
	Expected int `json:"ticks_expected"`
	// Fired counts the distinct ticks of every schedule that started a run.
	Fired int `json:"ticks_fired"`
	// Doubled counts the ticks that started more than one run.
	Doubled int `json:"ticks_doubled"`
	// Missed counts the expected ticks that started none.
	Missed int `json:"ticks_missed"`
	// Skipped counts the skip schedule's ticks that started no run, which
	// its policy allows while its last run is not done.
	Skipped int `json:"ticks_skipped"`
}

// countTicks counts the ticks of the schedules ss in the runs listed, and
// says what is wrong: a tick doubled or missed, a run off its schedule's
// grid or not named by its tick.
func countTicks(ss []*tickSchedule, runs []runSummary) (f TickFigures, problems []string) {
	for _, s := range ss {
		fired := map[int64][]string{}
		for _, r := range runs {
			if r.ScheduleID != s.id {
				continue
			}
			tick := r.TickAt.Unix()
			fired[tick] = append(fired[tick], r.RunID)
			if want := s.id + "-" + strconv.FormatInt(tick, 10); r.RunID != want {
				problems = append(problems, fmt.Sprintf("schedule %s: run %s for the tick %s, want %s", s.id, r.RunID, r.TickAt.UTC().Format(time.RFC3339), want))
			}
			if r.TickAt.Before(s.first) || r.TickAt.Sub(s.first)%s.every != 0 {
				problems = append(problems, fmt.Sprintf("schedule %s: run %s for the tick %s, not one of its ticks from %s", s.id, r.RunID, r.TickAt.UTC().Format(time.RFC3339), s.first.UTC().Format(time.RFC3339)))
			}
		}
		f.Fired += len(fired)
		ticks := make([]int64, 0, len(fired))
		for t := range fired {
			ticks = append(ticks, t)
		}
		sort.Slice(ticks, func(a, b int) bool { return ticks[a] < ticks[b] })
		for _, t := range ticks {
			if ids := fired[t]; len(ids) > 1 {
				f.Doubled++
				problems = append(problems, fmt.Sprintf("schedule %s: the tick %s started %d runs: %v", s.id, time.Unix(t, 0).UTC().Format(time.RFC3339), len(ids), ids))
			}
		}
		for _, t := range s.due() {
			if len(fired[t.Unix()]) > 0 {
				continue
			}
			if s.overlap != overlapAllowAll {
				f.Skipped++
				continue
			}
			f.Missed++
			problems = append(problems, fmt.Sprintf("schedule %s: the tick %s started no run", s.id, t.UTC().Format(time.RFC3339)))
		}
		if s.overlap == overlapAllowAll {
			f.Expected += len(s.due())
		}
	}
	return f, problems
}

// listTicks lists the runs of the schedules ss (created at since or
// later), every pollEvery until no tick is missed or deadline passes
// (a tick claimed before the pause may still be getting its run), and
// counts their ticks (countTicks). It returns the ids of their runs.
func listTicks(ctx context.Context, gw *gateway, ss []*tickSchedule, since, deadline time.Time) (*TickFigures, []string, []string, error) {
	for {
		runs, err := gw.runsSince(ctx, since.Add(-time.Second))
		if err != nil && time.Now().Before(deadline) && ctx.Err() == nil {
			sleep(ctx, pollEvery)
			continue
		}
		if err != nil {
			return nil, nil, nil, fmt.Errorf("list the runs of the schedules: %w", err)
		}
		f, problems := countTicks(ss, runs)
		if f.Missed == 0 || time.Now().After(deadline) || ctx.Err() != nil {
			return &f, problems, tickRuns(ss, runs), nil
		}
		sleep(ctx, pollEvery)
	}
}

// tickRuns returns the ids of the runs the schedules ss started, sorted.
func tickRuns(ss []*tickSchedule, runs []runSummary) []string {
	ours := map[string]bool{}
	for _, s := range ss {
		ours[s.id] = true
	}
	var out []string
	for _, r := range runs {
		if ours[r.ScheduleID] {
			out = append(out, r.RunID)
		}
	}
	sort.Strings(out)
	return out
}
