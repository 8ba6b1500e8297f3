package toolworker

import (
	"cmp"
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/limits"
	"github.com/stepwise-run/stepwise/topics"
)

// Flow control for tools (limits.tools, package limits). A call takes a
// slot of its tool's limits before it is claimed; refused, it is not
// claimed at all (no attempt counted, no pool slot held): the call is
// marked dispatched until its time comes, so no reconcile sends it before,
// and the sweeper is scheduled for then. A call waiting for a slot is
// queued, and the release that frees one publishes it again.

// waiterOf names a call in its tool's queue; wokenCall reverses it.
func waiterOf(runID, callID string) string { return runID + "|" + callID }

func wokenCall(waiter string) (runID, callID string, ok bool) {
	runID, callID, ok = strings.Cut(waiter, "|")
	return runID, callID, ok && runID != "" && callID != ""
}

// takeLimit takes a slot of the tool's limits for the claim owner is
// about to make, or defers the call and returns false.
func (w *Worker) takeLimit(ctx context.Context, req topics.ToolCallRequested, owner string, log *slog.Logger) (limits.Slot, bool) {
	if !w.limits.Limited(limits.Tool, req.Tool) {
		return limits.Slot{}, true
	}
	s := limits.Slot{Kind: limits.Tool, Name: req.Tool, Holder: owner, Waiter: waiterOf(req.RunID, req.CallID)}
	now := w.now()
	g, err := w.limits.Acquire(ctx, s, w.settings.Lease.Duration, now)
	if err != nil {
		log.Error("the limiter did not answer; deferring the call", "error", err)
		g = limits.Grant{Reason: "the limiter did not answer"}
	}
	if g.OK {
		return s, true
	}
	w.deferCall(ctx, req, now.Add(cmp.Or(g.RetryAfter, w.settings.Lease.Duration)), log.With("reason", g.Reason))
	return limits.Slot{}, false
}

// deferCall keeps a call that may not run yet from being sent again
// before until: the sweeper is scheduled for then (first, so a crash in
// between leaves a run that is looked at), and the call is marked
// dispatched as if at until less the dispatch timeout.
func (w *Worker) deferCall(ctx context.Context, req topics.ToolCallRequested, until time.Time, log *slog.Logger) {
	call, err := w.store.GetCall(ctx, req.RunID, req.CallID)
	if err != nil || (call.Status != pipeline.CallNew && call.Status != pipeline.CallResuming) {
		logErr(log, "read a deferred call", err)
		return // gone, or running or ended by another request meanwhile
	}
	err = w.store.ScheduleSweep(ctx, req.RunID, until)
	if err == nil {
		err = w.store.MarkDispatched(ctx, req.RunID, []pipeline.ToolCall{call}, until.Add(-w.cfg.StepWorker.DispatchTimeout.Duration))
	}
	if err != nil {
		logErr(log, "defer the call; it is sent again at its dispatch timeout instead", err)
		return
	}
	w.metrics.CallDeferred(req.Tool)
	log.Debug("call deferred", "until", until)
}

// releaseLimit frees the call's slot and sends again the call whose turn
// it is.
func (w *Worker) releaseLimit(s limits.Slot, log *slog.Logger) {
	if s.Holder == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(w.ctx), releaseTimeout)
	defer cancel()
	waiter, err := w.limits.Release(ctx, s)
	if err != nil {
		log.Error("release a slot of the tool's limits; its lease frees it", "error", err)
		return
	}
	runID, callID, ok := wokenCall(waiter)
	if !ok {
		return
	}
	call, err := w.store.GetCall(ctx, runID, callID)
	if err != nil || (call.Status != pipeline.CallNew && call.Status != pipeline.CallResuming) {
		logErr(log, "read a call waiting for its tool", err)
		return
	}
	_, trace, err := w.store.RunOwner(ctx, runID) // the run's trace, which the woken call joins
	logErr(log, "read the trace of a woken call's run", err)
	err = topics.PublishTraced(w.pub, w.names.ToolCalls(cmp.Or(call.Queue, topics.DefaultQueue)), topics.ToolCallRequested{
		Header: topics.Header{RunID: runID}, Step: call.Step, CallID: callID, Tool: call.Tool,
	}, trace)
	logErr(log.With("woken_call_id", callID), "wake a call waiting for its tool", err)
}

// logErr logs err, if any, as what failed.
func logErr(log *slog.Logger, what string, err error) {
	if err != nil {
		log.Error(what, "error", err)
	}
}
