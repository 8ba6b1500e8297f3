package stepworker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/stepwise-run/stepwise/internal/lease"
	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/config"
	"github.com/stepwise-run/stepwise/pipeline/model"
	"github.com/stepwise-run/stepwise/pipeline/plugin"
	"github.com/stepwise-run/stepwise/pipeline/store"
	"github.com/stepwise-run/stepwise/topics"
)

// HandleStep handles StepRequested: it claims the step with a lease (RunStart
// on the first step happens in the claim), hands inference to the pool and
// acknowledges. A request for a step that is no longer current, or whose
// lease someone holds, is a no-op; one for a step already committed
// re-publishes its undispatched calls (the previous holder may have died
// between commit and publish).
func (w *Worker) HandleStep(msg *message.Message) error {
	req, err := topics.Decode[topics.StepRequested](msg.Payload)
	if err != nil {
		return err
	}
	ctx := msg.Context()
	now := w.now()
	log := w.log.With("run_id", req.RunID, "step", req.Step)
	run, err := w.store.ClaimStep(ctx, req.RunID, req.Step, w.lease(now), now)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return topics.Permanent(fmt.Errorf("step %d of run %s: %w", req.Step, req.RunID, err))
	case errors.Is(err, store.ErrStale):
		if run.Status == pipeline.RunRunning && run.Step == req.Step && run.StepState == pipeline.StepTools {
			return w.redispatch(ctx, run)
		}
		log.Debug("step request is stale", "reason", err)
		return nil
	case errors.Is(err, store.ErrLeaseHeld):
		log.Debug("step is held by another worker", "reason", err)
		return nil
	case err != nil:
		return fmt.Errorf("claim step %d of run %s: %w", req.Step, req.RunID, err)
	}
	if w.budgetSpent(run.Attempts) {
		return w.giveUp(ctx, run, fmt.Sprintf("step %d was claimed %d times without finishing", run.Step, run.Attempts-1))
	}
	return w.pool.Go(w.ctx, func() { w.runStep(run, log) })
}

// infer runs RunStart (first step), StepStart, BeforeInference — where
// plugins shape the request or skip inference, ending the run
// behavior_requested (nil response) —, the inference, and AfterInference.
func (w *Worker) infer(ctx context.Context, ph *phases, run pipeline.Run, agent config.Agent, mdl model.Model, specs []model.ToolSpec, log *slog.Logger) (*model.Response, error) {
	if run.Step == 0 {
		if err := ph.run(ctx, pipeline.PhaseRunStart); err != nil {
			return nil, err
		}
	}
	if err := ph.run(ctx, pipeline.PhaseStepStart); err != nil {
		return nil, err
	}
	ph.pc.Request = &plugin.Request{System: agent.System, Messages: slices.Clone(ph.pc.Messages), Tools: specs}
	if err := ph.run(ctx, pipeline.PhaseBeforeInference); err != nil {
		return nil, err
	}
	req := ph.pc.Request
	ph.pc.Request = nil
	if ph.pc.Skip != "" {
		return nil, w.finish(ctx, run, pipeline.Termination{Reason: pipeline.ReasonBehaviorRequested, Detail: ph.pc.Skip})
	}
	resp, err := mdl.Infer(ctx, model.Request{
		RunID: run.ID, Step: run.Step, System: req.System, Messages: req.Messages, Tools: req.Tools,
		Override: req.Override, OnText: w.streamText(ctx, run, log),
	})
	if err != nil {
		return nil, fmt.Errorf("inference failed: %w", err)
	}
	ph.pc.Response = &resp
	if err := ph.run(ctx, pipeline.PhaseAfterInference); err != nil {
		return nil, err
	}
	return &resp, nil
}

// runStep runs inference for a claimed step and commits its outcome. It runs
// on the pool, under the worker's context: when that ends, nothing is
// committed and the lease runs out for the sweeper to re-drive.
func (w *Worker) runStep(run pipeline.Run, log *slog.Logger) {
	ctx := w.ctx
	agent, _ := w.cfg.Agent(run.Agent)
	mdl, err := w.models.forRun(run)
	if err != nil {
		w.logErr(log, "end run", w.giveUp(ctx, run, err.Error()))
		return
	}
	stopRenewing := lease.Keep(ctx, w.settings.Lease.Duration,
		func(ctx context.Context) error {
			return w.store.RenewStepLease(ctx, run.ID, run.Step, w.lease(w.now()))
		},
		func(err error) bool { return errors.Is(err, store.ErrLeaseLost) },
		func() { log.Warn("lease lost while inferring; the outcome will be dropped") })
	defer stopRenewing()
	msgs, err := w.store.Messages(ctx, run.ID)
	if err != nil {
		log.Error("load messages; the sweeper will retry the step", "error", err)
		return
	}
	ph, err := w.phases(ctx, run, msgs)
	if err != nil {
		log.Error("load plugin state; the sweeper will retry the step", "error", err)
		return
	}
	specs := w.toolSpecs(ctx, agent.Tools)
	resp, err := w.infer(ctx, ph, run, agent, mdl, specs, log)
	stopRenewing() // the commit checks the lease; renewing past it would only fail
	if err != nil {
		if ctx.Err() == nil {
			w.logErr(log, "end run", w.giveUp(ctx, run, err.Error()))
		}
		return
	}
	if resp == nil {
		return // the run ended behavior_requested
	}
	calls, err := w.nameCalls(ctx, run, resp.ToolCalls)
	if err != nil {
		log.Error("name tool calls; the sweeper will retry the step", "error", err)
		return
	}
	calls, err = w.gate(ctx, ph, run, agent, paramsOf(specs), calls, w.now())
	if err != nil {
		w.logErr(log, "end run", w.giveUp(ctx, run, err.Error()))
		return
	}
	assistant := pipeline.Message{Role: pipeline.RoleAssistant, Content: resp.Text}
	for _, c := range calls {
		assistant.ToolCalls = append(assistant.ToolCalls, pipeline.ToolCallRequest{ID: c.ID, Name: c.Tool, Arguments: c.Arguments})
	}
	run, calls, err = w.store.CommitStep(ctx, run.ID, run.Step, w.id,
		store.StepCommit{Assistant: assistant, Calls: calls, Usage: resp.Usage, State: ph.updates()}, w.now())
	if errors.Is(err, store.ErrStale) || errors.Is(err, store.ErrLeaseLost) {
		log.Info("step outcome dropped: the step moved on without this worker", "reason", err)
		return
	}
	if err != nil {
		log.Error("commit step; the sweeper will retry it", "error", err)
		return
	}
	w.logErr(log, "dispatch", w.dispatch(ctx, run, calls))
	w.logErr(log, "advance", w.advance(ctx, run, calls))
}

// nameCalls turns the model's proposals into call records. A call keeps the
// model's id when the run has no call of that id yet; otherwise (or with no
// id) it gets one derived from the step and its position, so ids are unique
// within the run and the same on every attempt of the step.
func (w *Worker) nameCalls(ctx context.Context, run pipeline.Run, reqs []pipeline.ToolCallRequest) ([]pipeline.ToolCall, error) {
	ids := make([]string, len(reqs))
	seen := map[string]bool{}
	for i, r := range reqs {
		id := r.ID
		if id == "" || seen[id] {
			id = fmt.Sprintf("call_%d_%d", run.Step, i)
		}
		seen[id] = true
		ids[i] = id
	}
	taken, err := w.store.CallIDsTaken(ctx, run.ID, ids)
	if err != nil {
		return nil, err
	}
	calls := make([]pipeline.ToolCall, len(reqs))
	for i, r := range reqs {
		id := ids[i]
		if taken[i] {
			id = fmt.Sprintf("%s_s%d", id, run.Step)
		}
		t, _ := w.cfg.Tool(r.Name)
		calls[i] = pipeline.ToolCall{
			ID: id, RunID: run.ID, Step: run.Step, Index: i, Tool: r.Name,
			Queue: queueOf(t.Queue), Status: pipeline.CallNew, Arguments: r.Arguments,
		}
	}
	return calls, nil
}

func (w *Worker) logErr(log *slog.Logger, what string, err error) {
	if err != nil {
		log.Error(what, "error", err)
	}
}

// streamText returns the model's OnText: each delta of the answer goes to
// the run's event log as it arrives, for SSE clients. A delta that cannot
// be written is logged and dropped; the whole text is committed with the
// turn all the same.
func (w *Worker) streamText(ctx context.Context, run pipeline.Run, log *slog.Logger) func(string) {
	return func(delta string) {
		if delta == "" {
			return
		}
		if err := w.store.AppendDelta(ctx, run.ID, run.Step, w.id, delta, w.now()); err != nil {
			log.Debug("text delta dropped", "error", err)
		}
	}
}
