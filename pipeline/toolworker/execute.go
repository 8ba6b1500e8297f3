package toolworker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/stepwise-run/stepwise/internal/lease"
	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/store"
	"github.com/stepwise-run/stepwise/pipeline/tools"
	"github.com/stepwise-run/stepwise/topics"
)

// HandleToolCall handles ToolCallRequested: claim the call, hand it to the
// pool, acknowledge. A call that is finished, or held under an unexpired
// lease, is a no-op; so is one past its retry budget (the sweeper ends its
// run).
func (w *Worker) HandleToolCall(msg *message.Message) error {
	req, err := topics.Decode[topics.ToolCallRequested](msg.Payload)
	if err != nil {
		return err
	}
	ctx := msg.Context()
	now := w.now()
	log := w.log.With("run_id", req.RunID, "step", req.Step, "call_id", req.CallID, "tool", req.Tool)
	call, err := w.store.ClaimCall(ctx, req.RunID, req.CallID, w.lease(now), now)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return topics.Permanent(fmt.Errorf("call %s of run %s: %w", req.CallID, req.RunID, err))
	case errors.Is(err, store.ErrStale), errors.Is(err, store.ErrLeaseHeld):
		log.Debug("tool call request is a no-op", "reason", err)
		return nil
	case err != nil:
		return fmt.Errorf("claim call %s of run %s: %w", req.CallID, req.RunID, err)
	}
	if call.Attempts > w.maxTries {
		log.Warn("tool call is past its retry budget; leaving it to the sweeper", "attempts", call.Attempts)
		return nil
	}
	return w.pool.Go(w.ctx, func() { w.execute(call, log) })
}

// execute runs a claimed call and commits its outcome: succeeded, failed,
// or suspended when the tool returned pending (the call parks until a
// decision, like one suspended at ToolGate).
func (w *Worker) execute(call pipeline.ToolCall, log *slog.Logger) {
	outcome, ok := w.run(call)
	if !ok {
		return // the worker is stopping: commit nothing, the lease runs out
	}
	done, err := w.store.FinishCall(w.ctx, call.RunID, call.ID, w.id, outcome, w.now())
	if errors.Is(err, store.ErrLeaseLost) || errors.Is(err, store.ErrStale) {
		log.Info("tool outcome dropped: another worker took the call over", "reason", err)
		return
	}
	if err != nil {
		log.Error("commit tool outcome; the sweeper will re-drive the call", "error", err)
		return
	}
	if err := topics.Publish(w.pub, w.names.ToolResults(), topics.ToolCallFinished{
		Header: topics.Header{RunID: done.RunID}, Step: done.Step, CallID: done.ID, Status: done.Status,
	}); err != nil {
		log.Error("report tool outcome; the sweeper will fan it in", "error", err)
	}
}

// run executes the tool under its timeout while renewing the lease. ok is
// false when the worker's context ended: the outcome must not be committed.
func (w *Worker) run(call pipeline.ToolCall) (store.CallOutcome, bool) {
	tool, found := w.tools[call.Tool]
	if !found {
		return failed(fmt.Sprintf("unknown tool %q", call.Tool)), true
	}
	timeout := w.timeout(call.Tool)
	ctx, cancel := context.WithTimeout(w.ctx, timeout)
	defer cancel()
	stopRenewing := w.renew(ctx, call)
	defer stopRenewing()

	out, err := tool.Execute(ctx, tools.Call{
		RunID: call.RunID, CallID: call.ID, Step: call.Step, Attempt: call.Attempts, Tool: call.Tool, Arguments: call.Arguments,
	})
	reason, pending := tools.IsPending(err)
	switch {
	case w.ctx.Err() != nil:
		return store.CallOutcome{}, false
	case pending:
		t, _ := w.cfg.Tool(call.Tool)
		return store.CallOutcome{Status: pipeline.CallSuspended, Parking: t.Park(call.RunID, call.ID, reason, w.now())}, true
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return failed(fmt.Sprintf("timed out after %s", timeout)), true
	case err != nil:
		return failed(err.Error()), true
	}
	return store.CallOutcome{Status: pipeline.CallSucceeded, Result: out}, true
}

func failed(msg string) store.CallOutcome {
	return store.CallOutcome{Status: pipeline.CallFailed, Error: msg}
}

func (w *Worker) timeout(tool string) time.Duration {
	if t, ok := w.cfg.Tool(tool); ok && t.Timeout.Duration > 0 {
		return t.Timeout.Duration
	}
	return w.settings.DefaultTimeout.Duration
}

func (w *Worker) lease(now time.Time) store.Lease {
	return store.Lease{Owner: w.id, Until: now.Add(w.settings.Lease.Duration)}
}

// renew extends the call's lease every third of the lease period until the
// returned function is called. A lost lease is logged; the execution goes on
// and its commit will be refused.
func (w *Worker) renew(ctx context.Context, call pipeline.ToolCall) (stop func()) {
	return lease.Keep(ctx, w.settings.Lease.Duration,
		func(ctx context.Context) error {
			return w.store.RenewCallLease(ctx, call.RunID, call.ID, w.lease(w.now()))
		},
		func(err error) bool { return errors.Is(err, store.ErrLeaseLost) },
		func() { w.log.Warn("lease lost while executing", "run_id", call.RunID, "call_id", call.ID) })
}
