package scheduler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/schedule"
	"github.com/stepwise-run/stepwise/pipeline/store"
	"github.com/stepwise-run/stepwise/pipeline/versions"
)

// Batch is how many due schedules one Pass looks at.
const Batch = 256

// lookRounds bounds the writes one look makes to one schedule: each
// round acts on the record the last one left (clear a firing, take the due
// ticks, clear their firing); more means others keep writing it, and the
// look comes back at its recheck.
const lookRounds = 4

// ErrBusy is returned when a schedule kept changing under a look.
var ErrBusy = errors.New("the schedule kept changing; try again")

// Firer fires schedules. Store and Now are required; Poll is how soon a
// schedule whose tick waits for its last run (buffer_one) is looked at
// again (default a second); Log defaults to slog.Default(). Safe for
// concurrent use, by any number of processes.
type Firer struct {
	Store *store.Store
	Now   func() time.Time
	Poll  time.Duration
	Log   *slog.Logger
	// Versions pins each run a schedule starts to the version of its
	// agent current here (package versions); nil pins none.
	Versions *versions.Catalog
}

// Pass looks at the schedules that are due (store.DueSchedules, each
// listed again at now + recheck in the same script, so a look that dies
// is done again then) and fires their ticks. It returns how many it looked
// at. A listed schedule with no record (its create died before the
// record's write) is unlisted.
func (f *Firer) Pass(ctx context.Context, recheck time.Duration) (int, error) {
	now := f.Now()
	ids, err := f.Store.DueSchedules(ctx, now, Batch, now.Add(recheck))
	if err != nil {
		return 0, fmt.Errorf("due schedules: %w", err)
	}
	for _, id := range ids {
		err := f.look(ctx, id)
		if errors.Is(err, store.ErrNotFound) {
			err = f.Store.DeleteSchedule(ctx, id)
		}
		if err != nil {
			f.log().Error("fire schedule", "schedule_id", id, "error", err)
		}
	}
	return len(ids), nil
}

// look brings one schedule forward: a firing left on its record is
// completed, then its due ticks are taken (Timer.Plan) and fired.
func (f *Firer) look(ctx context.Context, id string) error {
	sc, err := f.Store.GetSchedule(ctx, id)
	if err != nil {
		return err
	}
	for range lookRounds {
		now := f.Now()
		next, done, err := f.step(ctx, sc, now)
		if err != nil || done {
			return err
		}
		sc = next
	}
	return fmt.Errorf("schedule %s: %w", id, ErrBusy)
}

// step does the first thing sc asks for at now, and returns the record to
// look at next, or done.
func (f *Firer) step(ctx context.Context, sc schedule.Schedule, now time.Time) (schedule.Schedule, bool, error) {
	if len(sc.Firing) > 0 {
		got, _, err := f.complete(ctx, sc)
		return got, false, err
	}
	if sc.Paused {
		_, _, err := f.Store.PutSchedule(ctx, sc, sc.LookAt(now, f.poll())) // unlisted until resumed
		return sc, true, err
	}
	timer, err := schedule.NewTimer(sc.Spec)
	if err != nil {
		return sc, true, fmt.Errorf("schedule %s: %w", sc.ID, err)
	}
	busy, err := f.busy(ctx, sc)
	if err != nil {
		return sc, true, err
	}
	plan := timer.Plan(schedule.State{Next: sc.Next, Buffered: sc.Buffered, Busy: busy}, now)
	claim := sc
	claim.Next, claim.Buffered, claim.UpdatedAt = plan.Next, plan.Buffered, now
	for _, tick := range plan.Fire {
		claim.Firing = append(claim.Firing, schedule.FiringOf(sc.ID, tick, false))
	}
	if len(plan.Fire) > 0 {
		claim.LastRun = claim.Firing[len(claim.Firing)-1].RunID
	}
	got, written, err := f.Store.PutSchedule(ctx, claim, claim.LookAt(now, f.poll()))
	if err != nil || !written {
		return got, false, err // another look took it first: look at what it wrote
	}
	return got, len(got.Firing) == 0, nil
}

// complete creates the runs of sc's firing (a replay for those that
// exist) and clears it. written is false when another write came first.
func (f *Firer) complete(ctx context.Context, sc schedule.Schedule) (schedule.Schedule, bool, error) {
	for _, fr := range sc.Firing {
		if err := f.create(ctx, sc, fr); err != nil {
			return sc, false, err
		}
	}
	done := sc
	done.Firing, done.UpdatedAt = nil, f.Now()
	return f.Store.PutSchedule(ctx, done, done.LookAt(done.UpdatedAt, f.poll()))
}

// create creates fr's run of sc, due for the sweepers at once: their
// reconcile requests its first step.
func (f *Firer) create(ctx context.Context, sc schedule.Schedule, fr schedule.Firing) error {
	now := f.Now()
	run := sc.NewRun(fr)
	if f.Versions != nil {
		var err error
		if run.AgentVersion, err = f.Versions.Pin(ctx, run.Agent); err != nil {
			return fmt.Errorf("schedule %s: run %s: %w", sc.ID, fr.RunID, err)
		}
	}
	_, created, err := f.Store.StartRun(ctx, run, sc.Run.Input, now, now)
	if err != nil {
		return fmt.Errorf("schedule %s: start run %s: %w", sc.ID, fr.RunID, err)
	}
	if created {
		f.log().Info("schedule fired", "schedule_id", sc.ID, "run_id", fr.RunID, "tick", fr.Tick)
	}
	return nil
}

// busy reports whether sc's last run is not done (a run that is gone is).
// Under allow_all, with no tick waiting, it does not matter: no read.
func (f *Firer) busy(ctx context.Context, sc schedule.Schedule) (bool, error) {
	if sc.LastRun == "" || (sc.Spec.Overlap == schedule.OverlapAllowAll && sc.Buffered.IsZero()) {
		return false, nil
	}
	run, err := f.Store.GetRun(ctx, sc.LastRun)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return false, nil
	case err != nil:
		return false, err
	}
	return run.Status != pipeline.RunDone, nil
}

// Trigger fires sc now, whatever its timer and overlap policy say, and
// returns the run it started: the run is taken as firing, then created,
// as a tick's. runID, when not empty, names the run, which makes the
// trigger idempotent: a run of that id that the schedule started already
// is returned as it is, one that it did not start is store.ErrConflict.
func (f *Firer) Trigger(ctx context.Context, id, runID string) (string, error) {
	if runID != "" {
		run, err := f.Store.GetRun(ctx, runID)
		switch {
		case err == nil && run.ScheduleID == id:
			return runID, nil
		case err == nil:
			return "", fmt.Errorf("run %s exists and schedule %s did not start it: %w", runID, id, store.ErrConflict)
		case !errors.Is(err, store.ErrNotFound):
			return "", err
		}
	}
	for range lookRounds {
		sc, err := f.Store.GetSchedule(ctx, id)
		if err != nil {
			return "", err
		}
		now := f.Now()
		fr := schedule.FiringOf(id, now, true)
		if runID != "" {
			fr.RunID = runID
		}
		sc.Firing, sc.LastRun, sc.UpdatedAt = append(sc.Firing, fr), fr.RunID, now
		got, written, err := f.Store.PutSchedule(ctx, sc, sc.LookAt(now, f.poll()))
		if err != nil {
			return "", err
		}
		if written {
			_, _, err := f.complete(ctx, got)
			return fr.RunID, err
		}
	}
	return "", fmt.Errorf("schedule %s: %w", id, ErrBusy)
}

func (f *Firer) poll() time.Duration {
	if f.Poll <= 0 {
		return time.Second
	}
	return f.Poll
}

func (f *Firer) log() *slog.Logger {
	if f.Log == nil {
		return slog.Default()
	}
	return f.Log
}
