package toolworker

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/plugin"
	"github.com/stepwise-run/stepwise/pipeline/store"
	"github.com/stepwise-run/stepwise/pipeline/tools"
)

// withPhases runs a call's execution between its BeforeToolExecute and
// AfterToolExecute phases, the two that run in the tool worker. Hooks of
// BeforeToolExecute run only for calls that actually execute; an error in
// either phase fails the call. A run or plugin state that could not be
// read is not the call's fault: the call is given back (not ok: abandoned,
// and re-driven by the sweeper). execute runs the call with tool, or with
// its configured executor when tool is nil: a tool a plugin of the run's
// agent executes (executor: {plugin}) is given, and the Command it returns
// is applied as a hook's. AfterToolExecute's actions may change the outcome
// (a result guard cutting a large result, say). The persistent state
// updates of the two phases and the tool, and the actions that failed or
// were aimed elsewhere (another process, a later step: Set.Strand), go
// with the outcome: FinishCall commits them with it. Runs of agents
// without plugins skip both and the extra reads.
func (w *Worker) withPhases(ctx context.Context, call pipeline.ToolCall, execute func(tool tools.Tool) (store.CallOutcome, bool)) (store.CallOutcome, bool) {
	if !w.anyPlugins {
		return execute(nil)
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
	later, err := set.Run(ctx, pc, nil)
	if err != nil {
		return failed(fmt.Sprintf("%s: %v", pipeline.PhaseBeforeToolExecute, err)), ctx.Err() == nil
	}
	var tool tools.Tool
	var cmd plugin.Command
	if t, ok := set.Tool(call.Tool); ok {
		tool = pluginTool(t, pc, &cmd)
	}
	outcome, ok := execute(tool)
	if !ok {
		return outcome, false
	}
	later = append(later, set.Apply(pc, cmd)...)
	pc.Phase = pipeline.PhaseAfterToolExecute
	pc.Result = &plugin.Result{Status: outcome.Status, Value: outcome.Result, Error: outcome.Error}
	if later, err = set.Run(ctx, pc, later); err != nil {
		return failed(fmt.Sprintf("%s: %v", pipeline.PhaseAfterToolExecute, err)), ctx.Err() == nil
	}
	set.Strand(pc, later)
	outcome.Result, outcome.Error = pc.Result.Value, pc.Result.Error
	outcome.State, outcome.Failed = set.PersistentUpdates(pc.Updates), pc.Failed
	return outcome, true
}

// pluginTool adapts a plugin's tool to the executor interface: its result
// is the call's, its Command lands in cmd (the try that succeeded's).
func pluginTool(t plugin.Tool, pc *plugin.Context, cmd *plugin.Command) tools.Tool {
	return tools.Func(func(ctx context.Context, c tools.Call) (json.RawMessage, error) {
		out, err := t(ctx, pc, c.Arguments)
		if err != nil {
			return nil, err
		}
		*cmd = out.Command
		return out.Result, nil
	})
}
