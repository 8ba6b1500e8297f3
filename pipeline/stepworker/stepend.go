package stepworker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/config"
	"github.com/stepwise-run/stepwise/pipeline/store"
	"github.com/stepwise-run/stepwise/pipeline/versions"
	"github.com/stepwise-run/stepwise/pipeline/worker"
	"github.com/stepwise-run/stepwise/topics"
)

// HandleToolResult handles ToolCallFinished: the fan-in of a step. It
// hands a reconcile of the run to the pool and acknowledges, so a partition
// never waits on one run's fan-in. The reconcile reads the run and the
// step's calls from the store, one at a time per run (coalesce.go): it
// applies held decisions, dispatches the next call in sequential mode,
// sets the run waiting, or ends the step and runs the next one in the same
// slot. Duplicates and reordering change nothing: the writes check the
// state they expect. If the reconcile fails, the sweeper's does the same;
// a result for a run Redis does not hold is logged (warn) and dropped.
//
// A fan-in never waits behind the inferences: when the pool is full it
// runs on the decisions' pool instead, and requests the next step rather
// than running it in place, so the step's tenant's share applies to it
// like to any other request (ADR 0048).
func (w *Worker) HandleToolResult(msg *message.Message) error {
	res, err := topics.Decode[topics.ToolCallFinished](msg.Payload)
	if err != nil {
		return err
	}
	free := w.pool.TryTake(1)
	here := free.Len() == 1
	var slot *worker.Slot
	if here {
		slot = free.Slot()
	} else if slot, err = w.decided.Take(msg.Context()); err != nil {
		return err
	}
	slot.Go(func() {
		w.fanIn.do(res.RunID, func() {
			switch err := w.reconcileRead(w.ctx, res.RunID, here); {
			case errors.Is(err, store.ErrNotFound):
				w.log.Warn("tool result for an unknown run dropped", "run_id", res.RunID, "step", res.Step, "call_id", res.CallID)
			case err != nil:
				w.log.Error("fan in a tool result; the sweeper will retry", "run_id", res.RunID, "call_id", res.CallID, "error", err)
			}
		})
	})
	return nil
}

// endStep is the StepEnd phase: append the tool results in call order, then
// end the run (a blocked call: blocked; no calls: natural end; a stop
// condition that fires: stopped with its code) or move it to the next step.
// It returns the run as it is then, for the reconcile to publish what that
// asks for. A step another handler ended meanwhile is left to it: that
// handler publishes what follows (or, if it died, the sweeper does), and
// publishing it here too would only send duplicates. A caller that holds a
// pool slot (here) claims the next step in the same round trip and runs it.
func (w *Worker) endStep(ctx context.Context, ver *versions.Version, run pipeline.Run, calls []pipeline.ToolCall, here bool) (*view, error) {
	state, failed, err := w.stepEnd(ctx, run, calls)
	if pe := (*phaseError)(nil); errors.As(err, &pe) {
		return w.giveUpFrom(ctx, run, err.Error())
	}
	if err != nil {
		return nil, err // the plugin state was not read: the next reconcile tries again
	}
	end := store.StepEnd{ToolMessages: toolMessages(calls), Finish: finishOf(calls), State: state, Failed: failed, CallIDs: callIDs(calls)}
	if end.Finish == nil {
		stop, err := w.stopped(ctx, ver, run, calls)
		if err != nil {
			return nil, fmt.Errorf("stop conditions of run %s: %w", run.ID, err)
		}
		end.Finish = stop
	}
	var ended pipeline.Run
	var held []store.HeldDecision
	var claimed *store.Claimed
	if now := w.now(); here && end.Finish == nil {
		ended, claimed, err = w.store.EndStepAndClaim(ctx, run.ID, run.Step, end, w.lease(w.claims.Next(), now), now)
	} else {
		ended, held, err = w.store.EndStep(ctx, run.ID, run.Step, end, now)
	}
	if errors.Is(err, store.ErrStale) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("end step %d of run %s: %w", run.Step, run.ID, err)
	}
	if len(run.Children) > 0 {
		if err := w.cancelOrphans(ctx, run, calls); err != nil {
			w.log.Warn("cancel the child runs of calls that ended without them", "run_id", run.ID, "error", err)
		}
	}
	if claimed != nil {
		return nil, w.runHere(ctx, claimed.Run, claimed.Messages)
	}
	return &view{Snapshot: store.Snapshot{Run: ended, Held: held, HeldKnown: ended.Status.Final()}, written: true}, nil
}

// ahead returns the calls that decide the step's status: all of them in
// parallel mode; in sequential mode those up to the first one that is not
// terminal — the seeds' "break on first suspension": the calls after a
// suspended one wait behind it, so the run waits.
func ahead(agent config.Agent, calls []pipeline.ToolCall) []pipeline.ToolCall {
	if !agent.Sequential() {
		return calls
	}
	for i, c := range calls {
		if !c.Status.Terminal() {
			return calls[:i+1]
		}
	}
	return calls
}

// finishOf says whether the step's calls end the run: a call blocked at
// ToolGate ends it blocked; a turn without calls is the natural end.
func finishOf(calls []pipeline.ToolCall) *pipeline.Termination {
	for _, c := range calls {
		if c.Gate == pipeline.GateBlock {
			return &pipeline.Termination{Reason: pipeline.ReasonBlocked, Detail: c.Error}
		}
	}
	if len(calls) == 0 {
		return &pipeline.Termination{Reason: pipeline.ReasonNaturalEnd}
	}
	return nil
}

func (w *Worker) requestStep(run pipeline.Run) error {
	return topics.PublishTraced(w.pub, w.names.RunSteps(), topics.StepRequested{Header: topics.Header{RunID: run.ID}, Step: run.Step, Tenant: run.Tenant}, run.Trace)
}

// toolMessages turns the calls of a step, in call order, into the messages
// that tell the model their outcomes.
func toolMessages(calls []pipeline.ToolCall) []pipeline.Message {
	out := make([]pipeline.Message, len(calls))
	for i, c := range calls {
		out[i] = pipeline.Message{Role: pipeline.RoleTool, ToolCallID: c.ID, Content: toolContent(c)}
	}
	return out
}

func toolContent(c pipeline.ToolCall) string {
	switch c.Status {
	case pipeline.CallSucceeded:
		var s string
		if json.Unmarshal(c.Result, &s) == nil {
			return s
		}
		return string(c.Result)
	case pipeline.CallCancelled:
		return c.Error // says who cancelled it and why
	default:
		return "error: " + c.Error
	}
}

// callIDs are the ids of calls, in their order.
func callIDs(calls []pipeline.ToolCall) []string {
	ids := make([]string, len(calls))
	for i, c := range calls {
		ids[i] = c.ID
	}
	return ids
}
