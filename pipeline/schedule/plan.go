package schedule

import "time"

// State is what one look at a schedule needs besides the clock: its next
// tick not yet taken, the tick buffer_one keeps waiting (zero: none), and
// whether the last run it started is not done yet.
type State struct {
	Next     time.Time
	Buffered time.Time
	Busy     bool
}

// Plan is what a look does: start a run for each tick of Fire (oldest
// first), keep Buffered waiting, and look again at Next.
type Plan struct {
	Fire     []time.Time
	Buffered time.Time
	Next     time.Time
}

// Plan decides what a look at now does with the ticks of st that came
// due. Ticks older than the catch-up window are dropped. Of the others,
// allow_all starts each (the latest MaxCatchup at most); skip and
// buffer_one take only the latest, as a late Temporal schedule does: skip
// starts it unless the last run is busy, buffer_one keeps it waiting then
// (one at a time: while one waits, later ticks are dropped). A waiting
// tick starts once the last run is done.
func (t *Timer) Plan(st State, now time.Time) Plan {
	due, next := t.due(st.Next, now)
	p := Plan{Next: next, Buffered: st.Buffered}
	busy := st.Busy
	if !p.Buffered.IsZero() && !busy {
		p.Fire, p.Buffered, busy = append(p.Fire, p.Buffered), time.Time{}, true
	}
	if len(due) == 0 {
		return p
	}
	switch latest := due[len(due)-1]; {
	case t.spec.Overlap == OverlapAllowAll:
		p.Fire = append(p.Fire, due...)
	case !busy:
		p.Fire = append(p.Fire, latest)
	case t.spec.Overlap == OverlapBufferOne && p.Buffered.IsZero():
		p.Buffered = latest
	}
	return p
}

// due lists the ticks from next on that are at or before now and within
// the catch-up window (the latest MaxCatchup), and the first tick after
// now (zero for a cron expression that matches no time: it never ticks).
func (t *Timer) due(next, now time.Time) ([]time.Time, time.Time) {
	if oldest := now.Add(-t.spec.CatchupWindow); next.Before(oldest) {
		next = t.Next(oldest.Add(-time.Millisecond))
	}
	var due []time.Time
	for ; !next.IsZero() && !next.After(now); next = t.Next(next) {
		if len(due) == MaxCatchup {
			due = append(due[:0], due[1:]...)
		}
		due = append(due, next)
	}
	return due, next
}
