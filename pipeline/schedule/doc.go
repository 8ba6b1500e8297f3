// Package schedule is the pure part of scheduled runs: when a schedule
// ticks (a cron expression in a time zone, or a fixed interval aligned to
// the Unix epoch), and what one look at a schedule does with the ticks
// that came due (Timer.Plan): which start a run now, which waits for the
// previous run (overlap buffer_one) and which are dropped (overlap skip,
// or missed past the catch-up window). No I/O and no clock: the caller
// passes now. The store keeps a schedule (Schedule) and claims its ticks;
// the step workers' sweepers fire them (stepworker), ADR 0062.
//
//	t, err := schedule.NewTimer(schedule.Spec{Cron: "*/5 * * * *", Timezone: "Europe/Paris", Overlap: schedule.OverlapSkip})
//	plan := t.Plan(schedule.State{Next: sc.Next, Busy: lastRunNotDone}, now)
//	// start a run for each of plan.Fire, keep plan.Next and plan.Buffered
package schedule
