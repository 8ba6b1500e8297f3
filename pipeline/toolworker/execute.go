package toolworker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	oteltrace "go.opentelemetry.io/otel/trace"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/store"
	"github.com/stepwise-run/stepwise/pipeline/tools"
	"github.com/stepwise-run/stepwise/pipeline/tracing"
	"github.com/stepwise-run/stepwise/pipeline/worker"
	"github.com/stepwise-run/stepwise/topics"
)

// HandleToolCall handles ToolCallRequested: take a pool slot (waiting
// while the pool is full), claim the call with a lease of its own, hand it
// to the slot, acknowledge. A call held under a live lease is a no-op; so
// is one past its retry budget (the sweeper ends its run). A call that has
// already finished — or parked — gets its ToolCallFinished published
// again: the worker that finished it may have died before publishing, and
// the step's fan-in must still happen; a duplicate is a no-op there.
//
// The claim of a request that says it has siblings also takes, on the
// pool's free slots, the other calls of a parallel step that wait for
// their first claim (ADR 0025): their requests are behind this one on the
// partition, and are then acknowledged without a claim of their own.
func (w *Worker) HandleToolCall(msg *message.Message) error {
	req, err := topics.Decode[topics.ToolCallRequested](msg.Payload)
	if err != nil {
		return err
	}
	if w.ahead.take(req.RunID, req.CallID) {
		return nil // claimed with an earlier call of its step, and running or done here
	}
	ctx := msg.Context()
	log := worker.LogWith(w.log, "run_id", req.RunID, "step", req.Step, "call_id", req.CallID, "tool", req.Tool)
	owner := w.claims.Next()
	limit, ok := w.takeLimit(ctx, req, owner, log)
	if !ok {
		return nil // deferred: the call waits for its tool, holding no pool slot
	}
	slot, err := w.pool.Take(ctx)
	if err != nil {
		w.releaseLimit(limit, log)
		return err // stopping: the message comes back to whoever owns the partition next
	}
	now := w.now()
	more := w.pool.TryTake(min(req.Siblings, maxSiblings))
	defer more.Release()
	call, sibs, err := w.store.ClaimCallAndSiblings(ctx, req.RunID, req.CallID, w.lease(owner, now), now,
		store.Siblings{Max: more.Len(), SkipTools: w.limitedTools})
	if err != nil {
		slot.Release()
		w.releaseLimit(limit, log)
	}
	switch {
	case errors.Is(err, store.ErrNotFound):
		return topics.Permanent(fmt.Errorf("call %s of run %s: %w", req.CallID, req.RunID, err))
	case errors.Is(err, store.ErrStale):
		if call.Status.Terminal() || call.Status == pipeline.CallSuspended {
			log.Debug("tool call already finished; reporting it again", "status", call.Status)
			return w.report(tracing.FromMessage(msg), call)
		}
		log.Debug("tool call request is a no-op", "reason", err)
		return nil
	case errors.Is(err, store.ErrLeaseHeld):
		log.Debug("tool call is held by another claim", "reason", err)
		return nil
	case err != nil:
		return fmt.Errorf("claim call %s of run %s: %w", req.CallID, req.RunID, err)
	}
	trace := tracing.FromMessage(msg)
	for _, sib := range sibs { // attempt 1: within any retry budget
		w.ahead.add(sib.RunID, sib.ID, now)
		sibLog := worker.LogWith(w.log, "run_id", sib.RunID, "step", sib.Step, "call_id", sib.ID, "tool", sib.Tool)
		more.Slot().Go(func() { w.execute(trace, sib, sibLog) })
	}
	if call.Attempts > w.attempts(call.Tool) {
		slot.Release()
		w.releaseLimit(limit, log)
		log.Warn("tool call is past its retry budget; leaving it to the sweeper", "attempts", call.Attempts)
		return nil
	}
	slot.Go(func() {
		defer w.releaseLimit(limit, log)
		w.execute(trace, call, log)
	})
	return nil
}

// maxSiblings bounds the other calls of its step a claim takes with it,
// and so the free pool slots a claim holds for them while it runs.
const maxSiblings = 64

// execute runs a claimed call and commits its outcome as the claim's owner
// (call.LeaseOwner): succeeded, failed, or suspended when the tool returned
// pending (the call parks until a decision, like one suspended at
// ToolGate). It reports the outcome (ToolCallFinished) when the step's
// fan-in is due: not while other calls of a parallel step are in flight,
// since the last of them reports and its fan-in reads them all. An execution the worker gives up on while stopping commits
// nothing and releases its lease. One whose call is cancelled while it runs
// (w.running) stops and commits nothing: the cancel wrote the call's end.
func (w *Worker) execute(trace string, call pipeline.ToolCall, log *slog.Logger) {
	started := time.Now()
	ctx, over := w.running.Start(w.ctx, store.CallRef{RunID: call.RunID, CallID: call.ID})
	defer over()
	ctx, span := tracing.Start(ctx, trace, oteltrace.SpanKindConsumer, func() (string, []attribute.KeyValue) {
		return "execute_tool " + call.Tool, []attribute.KeyValue{attribute.String("gen_ai.operation.name", "execute_tool"),
			attribute.String("gen_ai.tool.name", call.Tool), attribute.String("gen_ai.tool.call.id", call.ID),
			tracing.RunID(call.RunID), tracing.Step(call.Step), attribute.Int("stepwise.attempt", call.Attempts)}
	})
	defer span.End()
	log = tracing.Log(log, span)
	outcome, ok := w.withPhases(ctx, call, func(tool tools.Tool) (store.CallOutcome, bool) {
		out, ok := w.run(ctx, call, tool)
		// A secret a tool echoes (an http tool's header, say) stops here,
		// before AfterToolExecute's plugins may cut the result (result_guard).
		out.Result, out.Error = w.redact.JSON(out.Result), w.redact.String(out.Error)
		return out, ok
	})
	if span.IsRecording() {
		span.SetAttributes(attribute.String("stepwise.call.status", string(outcome.Status)))
	}
	if outcome.Error != "" {
		span.SetStatus(codes.Error, outcome.Error)
	}
	if errors.Is(context.Cause(ctx), errCallCancelled) {
		w.metrics.ToolStopped(call.Tool)
		log.Info("tool call stopped: it was cancelled while it ran; nothing is committed")
		return
	}
	if !ok {
		w.abandon(call, log)
		return
	}
	done, err := w.store.FinishCall(w.ctx, call.RunID, call.ID, call.LeaseOwner, outcome, w.now())
	if errors.Is(err, store.ErrLeaseLost) || errors.Is(err, store.ErrStale) {
		log.Info("tool outcome dropped: another claim took the call over", "reason", err)
		return
	}
	if err == nil {
		w.metrics.ToolFinished(call.Tool, string(outcome.Status), time.Since(started))
	}
	if err != nil {
		log.Error("commit tool outcome; the sweeper will re-drive the call", "error", err)
		return
	}
	if !done.FanIn {
		return // other calls of the step are in flight: the last to finish reports
	}
	if err := w.report(tracing.Traceparent(ctx), done.Call); err != nil {
		log.Error("report tool outcome; the sweeper will fan it in", "error", err)
	}
}

// report publishes ToolCallFinished for a call whose outcome is committed,
// in the trace of trace (its traceparent; "" for none): the fan-in of its
// step, which reads the step from the store.
func (w *Worker) report(trace string, c pipeline.ToolCall) error {
	m := topics.ToolCallFinished{Header: topics.Header{RunID: c.RunID}, Step: c.Step, CallID: c.ID, Status: c.Status}
	return topics.PublishTraced(w.pub, w.names.ToolResults(), m, trace)
}

// abandon releases the lease of a call whose execution the worker gave up
// on while stopping, and asks the sweeper to look at the run now, so
// another worker runs the call without waiting for the lease to run out.
func (w *Worker) abandon(call pipeline.ToolCall, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(w.ctx), releaseTimeout)
	defer cancel()
	err := w.store.ReleaseCallLease(ctx, call.RunID, call.ID, call.LeaseOwner)
	if errors.Is(err, store.ErrLeaseLost) {
		return
	}
	if err == nil {
		err = w.store.ScheduleSweep(ctx, call.RunID, w.now())
	}
	if err != nil {
		log.Error("release the lease of an abandoned call", "error", err)
	}
}

// releaseTimeout bounds the writes that release an abandoned claim.
const releaseTimeout = 5 * time.Second

// run executes the tool (its configured executor when tool is nil) under
// its timeout while renewing the lease. A
// retryable tool error (see retryable) is retried with backoff until the
// tool's attempts are spent; each try tells the executor its attempt number,
// and the call id stays the idempotency key. ok is false when ctx (the
// worker's, or the call's: cancelled) ended: the outcome must not be
// committed.
func (w *Worker) run(ctx context.Context, call pipeline.ToolCall, tool tools.Tool) (store.CallOutcome, bool) {
	if tool == nil {
		found := false
		if tool, found = w.exec.byTool[call.Tool]; !found {
			return failed(w.unknown(call.Tool)), true
		}
	}
	stopRenewing := w.renew(ctx, call)
	defer stopRenewing()
	tries := w.attempts(call.Tool)
	backoff := 200 * time.Millisecond
	for try := 1; ; try++ {
		out, err, timedOut := w.try(ctx, tool, call, call.Attempts-1+try)
		reason, pending := tools.IsPending(err)
		switch {
		case ctx.Err() != nil:
			return store.CallOutcome{}, false
		case pending:
			t, _ := w.cfg.Tool(call.Tool)
			return store.CallOutcome{Status: pipeline.CallSuspended, Parking: t.Park(call.RunID, call.ID, reason, w.now())}, true
		case timedOut:
			return failed(fmt.Sprintf("timed out after %s", w.timeout(call.Tool))), true
		case err == nil:
			return store.CallOutcome{Status: pipeline.CallSucceeded, Result: out}, true
		case !retryable(err) || try >= tries:
			return failed(err.Error()), true
		}
		w.log.Info("retrying a tool call", "run_id", call.RunID, "call_id", call.ID, "try", try, "error", err)
		w.metrics.ToolRetried(call.Tool)
		select {
		case <-ctx.Done():
			return store.CallOutcome{}, false
		case <-time.After(backoff):
		}
		backoff *= 2
	}
}

// unknown is the error of a call of a tool this worker cannot execute.
func (w *Worker) unknown(tool string) string {
	if t, _ := w.cfg.Tool(tool); t.Executor.Plugin != "" {
		return fmt.Sprintf("tool %q is executed by plugin %q, which registers no tool of that name", tool, t.Executor.Plugin)
	}
	return fmt.Sprintf("unknown tool %q", tool)
}

// try executes the tool once under its timeout.
func (w *Worker) try(ctx context.Context, tool tools.Tool, call pipeline.ToolCall, attempt int) (json.RawMessage, error, bool) {
	ctx, cancel := context.WithTimeout(ctx, w.timeout(call.Tool))
	defer cancel()
	out, err := tool.Execute(ctx, tools.Call{
		RunID: call.RunID, CallID: call.ID, Step: call.Step, Attempt: attempt, Tool: call.Tool, Arguments: call.Arguments,
	})
	return out, err, errors.Is(ctx.Err(), context.DeadlineExceeded)
}

// attempts is how many times a call of the tool may be tried: the tool's
// max_attempts, else stepworker.max_attempts.
func (w *Worker) attempts(tool string) int {
	if t, ok := w.cfg.Tool(tool); ok && t.MaxAttempts > 0 {
		return t.MaxAttempts
	}
	return w.maxTries
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

func (w *Worker) lease(owner string, now time.Time) store.Lease {
	return store.Lease{Owner: owner, Until: now.Add(w.settings.Lease.Duration)}
}

// renew extends the call's lease every third of the lease period until the
// returned function is called. A lost lease is logged; the execution goes on
// and its commit will be refused.
func (w *Worker) renew(ctx context.Context, call pipeline.ToolCall) (stop func()) {
	return worker.KeepLease(ctx, w.settings.Lease.Duration,
		func(ctx context.Context) error {
			return w.store.RenewCallLease(ctx, call.RunID, call.ID, w.lease(call.LeaseOwner, w.now()))
		},
		func(err error) bool { return errors.Is(err, store.ErrLeaseLost) },
		func() { w.log.Warn("lease lost while executing", "run_id", call.RunID, "call_id", call.ID) })
}
