// Package scheduler fires schedules (package schedule) from their records
// in the store: every step worker's sweeper runs Firer.Pass, and the
// gateway Firer.Trigger. A tick fires exactly once however many run it:
// the look that takes it writes the schedule's next tick and the tick's
// run as firing in one compare-and-set of the record (store.PutSchedule),
// then creates the run, whose id the tick names (schedule.FiringOf), so a
// second create is a replay, then clears the firing. A look that dies
// between leaves the firing on the record, due at once: the next look
// creates the run and clears it (level-triggered, ADR 0062).
//
//	f := &scheduler.Firer{Store: st, Now: time.Now, Poll: time.Second, Log: log}
//	n, err := f.Pass(ctx, lease)
package scheduler
