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
	"github.com/stepwise-run/stepwise/topics"
)

// HandleToolResult handles ToolCallFinished: the fan-in of a step. It hands
// the work to the pool and acknowledges, so a partition never waits on one
// run's fan-in. The work reads the step's calls from the store (the message
// only says which step to look at, so duplicates and reordering change
// nothing); if it fails, the sweeper finds the step with every call terminal
// and ends it.
func (w *Worker) HandleToolResult(msg *message.Message) error {
	res, err := topics.Decode[topics.ToolCallFinished](msg.Payload)
	if err != nil {
		return err
	}
	return w.pool.Go(w.ctx, func() {
		if err := w.fanIn(w.ctx, res); err != nil {
			w.log.Error("fan in a tool result; the sweeper will retry", "run_id", res.RunID, "call_id", res.CallID, "error", err)
		}
	})
}

func (w *Worker) fanIn(ctx context.Context, res topics.ToolCallFinished) error {
	run, err := w.store.GetRun(ctx, res.RunID)
	if err != nil {
		return err
	}
	switch {
	case run.Status.Final():
		return nil
	case run.Step == res.Step+1 && run.StepState == pipeline.StepPending:
		// The step ended; its StepEnd may have died before requesting the
		// next one. Requesting it again is harmless.
		return w.requestStep(run)
	case run.Step != res.Step || run.StepState != pipeline.StepTools:
		return nil
	}

	calls, err := w.store.StepCalls(ctx, run.ID, run.Step)
	if err != nil {
		return err
	}
	return w.advance(ctx, run, calls)
}

// advance moves a committed step on according to derive_run_status: first
// decisions held for calls that have parked since are applied; then while
// calls run, sequential mode dispatches the next one; once nothing runs and
// something is suspended the run waits; once every call is terminal the
// step ends.
func (w *Worker) advance(ctx context.Context, run pipeline.Run, calls []pipeline.ToolCall) error {
	run, calls, err := w.releaseHeld(ctx, run, calls)
	if err != nil {
		return err
	}
	agent, _ := w.cfg.Agent(run.Agent)
	switch pipeline.DeriveRunStatus(pipeline.CallStatuses(ahead(agent, calls))) {
	case pipeline.RunRunning:
		if agent.Sequential() {
			return w.dispatch(ctx, run, calls)
		}
		return nil
	case pipeline.RunWaiting:
		if run.Status != pipeline.RunRunning {
			return nil
		}
		run, err := w.store.SetWaiting(ctx, run.ID, run.Step, agent.Sequential(), w.now())
		if errors.Is(err, store.ErrStale) {
			return nil // a decision got in first
		}
		if err != nil {
			return err
		}
		return w.scheduleWaiting(ctx, run, w.now())
	default:
		return w.endStep(ctx, run, calls)
	}
}

// endStep is the StepEnd phase: append the tool results in call order, then
// end the run (a blocked call: blocked; no calls: natural end; a stop
// condition that fires: stopped with its code) or request the next step. A step that
// another handler already ended is a no-op.
func (w *Worker) endStep(ctx context.Context, run pipeline.Run, calls []pipeline.ToolCall) error {
	state, err := w.stepEnd(ctx, run, calls)
	if err != nil {
		return w.giveUp(ctx, run, err.Error())
	}
	end := store.StepEnd{ToolMessages: toolMessages(calls), Finish: finishOf(calls), State: state}
	if end.Finish == nil {
		stop, err := w.stopped(ctx, run, calls)
		if err != nil {
			return fmt.Errorf("stop conditions of run %s: %w", run.ID, err)
		}
		end.Finish = stop
	}
	run, err = w.store.EndStep(ctx, run.ID, run.Step, end, w.now())
	if errors.Is(err, store.ErrStale) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("end step %d of run %s: %w", run.Step, run.ID, err)
	}
	if run.Status.Final() {
		return w.publishResult(run)
	}
	return w.requestStep(run)
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
	return topics.Publish(w.pub, w.names.RunSteps(), topics.StepRequested{Header: topics.Header{RunID: run.ID}, Step: run.Step})
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
