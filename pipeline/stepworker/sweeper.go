package stepworker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/stepwise-run/stepwise/pipeline/store"
)

// SweepBatch is how many due runs the sweeper takes at once, and
// SweepBatches how many batches one sweep takes at most (a bound, so a run
// that keeps coming due at once cannot hold a sweep forever).
const (
	SweepBatch   = 256
	SweepBatches = 64
)

// RunSweeper fires the schedules that are due (scheduler.Firer.Pass),
// sweeps, trims the indexes of expired runs, then runs the batchers of the
// models in batch mode whose lease it holds (batcher.go), every
// StepWorker.SweepInterval until ctx ends. Any number of step workers may
// sweep at once: each due run goes to one of them, and each tick of a
// schedule fires once. The runs the schedules start are due at once, so
// the sweep that follows requests their first steps.
func (w *Worker) RunSweeper(ctx context.Context) {
	t := time.NewTicker(w.settings.SweepInterval.Duration)
	defer t.Stop()
	for {
		if n, err := w.schedules.Pass(ctx, w.settings.Lease.Duration); err != nil {
			w.log.Error("fire schedules", "error", err, "schedules", n)
		}
		if n, err := w.Sweep(ctx); err != nil {
			w.log.Error("sweep", "error", err, "runs", n)
		}
		if n, err := w.Trim(ctx); err != nil {
			w.log.Error("trim expired runs", "error", err, "runs", n)
		}
		w.runBatchers(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Sweep reconciles the runs that are due: whatever went missing — a step
// request or a tool call nobody published, a step or call whose lease ran
// out (its worker died), a result nobody fanned in or published, a held
// decision or an approval that timed out — is derived from the run's state
// and done (see reconcile). It takes due runs in batches of SweepBatch until
// none is left (each batch is this worker's alone; taking a run pushes its
// next look one lease ahead), so thousands of active runs do not fall
// behind. It returns how many runs it looked at. A run that is not waiting
// is looked at at least once a lease period, so a dead worker's work is
// re-driven within about two. It first writes this worker's heartbeat and
// learns which workers are alive (marks.go), and retries taking back the
// marks of calls this worker could not publish.
func (w *Worker) Sweep(ctx context.Context) (int, error) {
	w.heartbeat(ctx, w.now())
	w.unsent.clear(ctx, w.store, w.log)
	swept := 0
	for batch := 0; batch < SweepBatches && ctx.Err() == nil; batch++ {
		now := w.now()
		ids, err := w.store.DueRuns(ctx, now, SweepBatch, now.Add(w.settings.Lease.Duration))
		if err != nil {
			return swept, fmt.Errorf("due runs: %w", err)
		}
		for _, id := range ids {
			err := w.reconcile(ctx, id)
			if errors.Is(err, store.ErrNotFound) {
				err = w.store.Forget(ctx, id) // scheduled, then never created, or expired
			}
			if err != nil {
				w.log.Error("sweep run", "run_id", id, "error", err)
			}
		}
		swept += len(ids)
		if len(ids) < SweepBatch {
			break
		}
	}
	return swept, nil
}

// Trim takes runs whose keys have expired (the retention) out of the
// global indexes, SweepBatch at a time up to SweepBatches batches, and
// returns how many it took out.
func (w *Worker) Trim(ctx context.Context) (int, error) {
	trimmed := 0
	for batch := 0; batch < SweepBatches && ctx.Err() == nil; batch++ {
		n, err := w.store.TrimRetired(ctx, w.now(), SweepBatch)
		trimmed += n
		if err != nil || n < SweepBatch {
			return trimmed, err
		}
	}
	return trimmed, nil
}
