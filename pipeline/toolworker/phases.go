package toolworker

import (
	"context"
	"fmt"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/plugin"
	"github.com/stepwise-run/stepwise/pipeline/store"
)

// withPhases runs a call's execution between its BeforeToolExecute and
// AfterToolExecute phases, the two that run in the tool worker. Hooks of
// BeforeToolExecute run only for calls that actually execute; an error in
// either phase fails the call. A run or plugin state that could not be
// read is not the call's fault: the call is given back (not ok: abandoned,
// and re-driven by the sweeper). AfterToolExecute's actions may change the
// outcome (a result guard cutting a large result, say). The hooks see the
// run's persistent state; state they set is not kept (the run's state
// changes with its steps, in the step worker). Runs of agents without
// plugins skip both and the extra reads.
func (w *Worker) withPhases(ctx context.Context, call pipeline.ToolCall, execute func() (store.CallOutcome, bool)) (store.CallOutcome, bool) {
	if !w.anyPlugins {
		return execute()
	}
	run, err := w.store.GetRun(ctx, call.RunID)
	if err != nil {
		return failed(fmt.Sprintf("load the run for its plugins: %v", err)), false
	}
	state, err := w.store.RunState(ctx, call.RunID)
	if err != nil {
		return failed(fmt.Sprintf("load the run's plugin state: %v", err)), false
	}
	set := w.plugins[run.CurrentAgent]
	pc := &plugin.Context{Phase: pipeline.PhaseBeforeToolExecute, Run: run, Call: &call, State: state}
	if _, err := set.Run(ctx, pc, nil); err != nil {
		return failed(fmt.Sprintf("%s: %v", pipeline.PhaseBeforeToolExecute, err)), ctx.Err() == nil
	}
	outcome, ok := execute()
	if !ok {
		return outcome, false
	}
	pc.Phase = pipeline.PhaseAfterToolExecute
	pc.Result = &plugin.Result{Status: outcome.Status, Value: outcome.Result, Error: outcome.Error}
	if _, err := set.Run(ctx, pc, nil); err != nil {
		return failed(fmt.Sprintf("%s: %v", pipeline.PhaseAfterToolExecute, err)), ctx.Err() == nil
	}
	outcome.Result, outcome.Error = pc.Result.Value, pc.Result.Error
	return outcome, true
}
