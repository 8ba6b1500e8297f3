package stepworker

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/limits"
	"github.com/stepwise-run/stepwise/pipeline/model"
	"github.com/stepwise-run/stepwise/pipeline/store"
)

// Flow control (limits:, package limits). A claimed step takes a slot of
// its model's limits before anything else; when it may not, the step is
// deferred: given back pending, its attempt uncounted, its pool slot
// freed. A step refused for a slot waits in the model's queue and is
// woken (its StepRequested published) by the release that frees one; any
// other refusal says when to come back. Either way the sweeper requests
// the step at that time, so a lost wake costs a delay, not the run.

// waiterOf names a step in its model's queue; wokenStep reverses it.
func waiterOf(run pipeline.Run) string { return run.ID + "|" + strconv.Itoa(run.Step) }

func wokenStep(waiter string) (pipeline.Run, bool) {
	id, step, ok := strings.Cut(waiter, "|")
	n, err := strconv.Atoi(step)
	return pipeline.Run{ID: id, Step: n}, ok && err == nil && id != ""
}

// takeLimit takes a slot of run's model's limits for the claim, or defers
// the step and returns false. A model without limits costs nothing.
func (w *Worker) takeLimit(ctx context.Context, run pipeline.Run, log *slog.Logger) (limits.Slot, bool) {
	key := w.models.keyOf(run)
	if !w.limits.Limited(limits.Model, key) {
		return limits.Slot{}, true
	}
	s := limits.Slot{Kind: limits.Model, Name: key, Tenant: run.Tenant, Batch: run.Batch, Holder: run.LeaseOwner, Waiter: waiterOf(run)}
	now := w.now()
	g, err := w.limits.Acquire(ctx, s, w.settings.Lease.Duration, now)
	if err != nil {
		log.Error("the limiter did not answer; deferring the step", "error", err)
		g = limits.Grant{Reason: "the limiter did not answer"}
	}
	if g.OK {
		return s, true
	}
	// Waiting for a slot: the release that frees one wakes the step; the
	// lease period is the fallback.
	w.deferStep(ctx, run, now.Add(cmp.Or(g.RetryAfter, w.settings.Lease.Duration)), "model "+key+": "+g.Reason, log)
	return limits.Slot{}, false
}

// deferStep gives the claimed step back until `until` (store.DeferStep),
// with the sweeper scheduled for then first, so a crash in between leaves
// a run that is looked at, not one that stalls.
func (w *Worker) deferStep(ctx context.Context, run pipeline.Run, until time.Time, reason string, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	err := w.store.ScheduleSweep(ctx, run.ID, until)
	if err == nil {
		err = w.store.DeferStep(ctx, run.ID, run.Step, run.LeaseOwner, until, reason, w.now())
	}
	if errors.Is(err, store.ErrLeaseLost) {
		return // taken over meanwhile
	}
	if err != nil {
		log.Error("defer the step; its lease runs out instead", "error", err)
		return
	}
	w.metrics.StepDeferred(w.models.keyOf(run))
	log.Debug("step deferred", "until", until, "reason", reason)
}

// releaseLimit frees the claim's slot and wakes the step whose turn it is.
func (w *Worker) releaseLimit(s limits.Slot, log *slog.Logger) {
	if s.Holder == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(w.ctx), releaseTimeout)
	defer cancel()
	waiter, err := w.limits.Release(ctx, s)
	if err != nil {
		log.Error("release a slot of the model's limits; its lease frees it", "error", err)
		return
	}
	if next, ok := wokenStep(waiter); ok {
		w.logErr(log.With("woken_run_id", next.ID), "wake a step waiting for the model", w.requestStep(next))
	}
}

// rateLimited handles an inference the provider refused with 429 after
// its own retries: every worker waits what the provider asked (when the
// model has limits to hold it), and the step is deferred, not failed.
func (w *Worker) rateLimited(ctx context.Context, run pipeline.Run, err error, log *slog.Logger) bool {
	var rl *model.RateLimitedError
	if !errors.As(err, &rl) {
		return false
	}
	key, now := w.models.keyOf(run), w.now()
	wait := cmp.Or(rl.RetryAfter, w.settings.Lease.Duration)
	w.logErr(log, "cool the model down", w.limits.CoolDown(ctx, key, wait, now))
	w.deferStep(ctx, run, now.Add(wait), "model "+key+": the provider answered 429", log)
	return true
}

// poolFull reports whether the inference pool has no free slot.
func (w *Worker) poolFull() bool { return w.pool.Busy() >= w.pool.Size() }

// deferForShare defers a claimed step whose tenant is over its share of
// the pool (shares.go) and queues it to be woken when a step of this
// worker ends and its tenant is no longer over (or at once, if steps ended
// meanwhile); the sweeper requests it a lease later should that wake be
// lost.
func (w *Worker) deferForShare(ctx context.Context, run pipeline.Run, log *slog.Logger) {
	w.deferStep(ctx, run, w.now().Add(w.settings.Lease.Duration), "tenant "+run.Tenant+" holds its share of the worker's slots", log)
	w.wake(w.shares.hold(run, w.poolFull()))
}

// leaveShare ends the count of run's step in its tenant's share and wakes
// the step deferred for its share whose turn it is.
func (w *Worker) leaveShare(run pipeline.Run) {
	w.wake(w.shares.leave(run))
}

// wake requests a step deferred for its tenant's share, when ok.
func (w *Worker) wake(next pipeline.Run, ok bool) {
	if ok {
		w.logErr(w.log.With("run_id", next.ID, "step", next.Step), "wake a step deferred for its tenant's share", w.requestStep(next))
	}
}
