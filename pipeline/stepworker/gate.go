package stepworker

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/config"
	"github.com/stepwise-run/stepwise/pipeline/versions"
)

// gate is ToolGate: it decides, serially and in call order, what happens to
// each proposed call before anything executes — the worker's own intercepts
// and those plugins schedule for the call combine by priority —, and sets the calls' initial
// state accordingly: allowed calls stay new (to be published), suspended
// ones are parked, set_result ones finish at once, and a block fails its
// call, cancels the calls after it and ends the run. A call of one of the
// agent's handoffs is answered by the worker alone (answerHandoff): no
// plugin or permission gates it. A call of an agent tool parks until its
// child run answers (startChildren), or fails at once over the limits of
// runs.children. Gate decisions depend only on ver (the run's agent
// version: its tools and their policy), the arguments and the run as claimed (its handoff count, the child runs it
// started in earlier steps), so replaying a step decides the same.
func (w *Worker) gate(ctx context.Context, ph *phases, run pipeline.Run, ver *versions.Version, params map[string]json.RawMessage, calls []pipeline.ToolCall, now time.Time) ([]pipeline.ToolCall, error) {
	out := make([]pipeline.ToolCall, len(calls))
	blocked, handing := "", false
	children := len(run.Children) // the child runs it has, and those the calls before start
	for i, c := range calls {
		if blocked != "" {
			c.Status, c.Error = pipeline.CallCancelled, blockedAt(blocked)
			out[i] = c
			continue
		}
		if to, ok := ver.Agent.HandoffTarget(c.Tool); ok {
			out[i] = w.answerHandoff(run, c, to, handing)
			handing = handing || out[i].Status == pipeline.CallSucceeded
			continue
		}
		fromPlugins, err := ph.gateCall(ctx, c)
		if err != nil {
			return nil, err
		}
		in := pipeline.CombineIntercepts(append(policy(ver, c), fromPlugins...)...)
		_, configured := w.cfg.Tool(c.Tool)
		_, pinned := ver.Tool(c.Tool)
		if pre := w.precheck(ver, params, c); pre != nil && (configured || pinned || len(fromPlugins) == 0) {
			// An unavailable tool or invalid arguments fail the call whatever
			// else is said; only a plugin answering a tool of its own
			// (tool_search: neither a tool of this worker's file nor of
			// the run's version) is not "unavailable".
			in = *pre
		}
		if t, _ := ver.Tool(c.Tool); in.Action == pipeline.GateSuspend && t.Executor.Agent != "" {
			if refused := w.childRefused(run, c, children); refused != "" {
				in = pipeline.Intercept{Action: pipeline.GateSetResult, Error: refused}
			} else {
				children++
			}
		}
		out[i] = w.gated(ver, c, in, now)
		if in.Action == pipeline.GateBlock {
			blocked = c.ID
		}
	}
	return out, nil
}

// gated is call c as ToolGate's combined decision in leaves it: a block
// fails it with the reason, a suspend parks it with its tool's approval
// settings, a set_result finishes it with the result (or fails it with the
// error), an allow leaves it new.
func (w *Worker) gated(ver *versions.Version, c pipeline.ToolCall, in pipeline.Intercept, now time.Time) pipeline.ToolCall {
	c.Gate = in.Action
	switch in.Action {
	case pipeline.GateBlock:
		c.Status, c.Error = pipeline.CallFailed, in.Reason
	case pipeline.GateSuspend:
		t, _ := ver.Tool(c.Tool)
		c.Status, c.Parking = pipeline.CallSuspended, t.Park(c.RunID, c.ID, in.Reason, now)
	case pipeline.GateSetResult:
		c.Status, c.Result, c.Error = pipeline.CallSucceeded, in.Result, in.Error
		if in.Error != "" {
			c.Status = pipeline.CallFailed
		}
	default:
		c.Status = pipeline.CallNew
	}
	return c
}

// blockedAt is the error of a call not run because ToolGate blocked the
// call id before it.
func blockedAt(id string) string { return "not run: the run was blocked at call " + id }

// precheck fails a call before the gate when ver, the run's agent version,
// does not offer its tool or its arguments do not fit the tool's JSON
// Schema, with a message the model can act on; nil when the call may be
// gated.
func (w *Worker) precheck(ver *versions.Version, params map[string]json.RawMessage, c pipeline.ToolCall) *pipeline.Intercept {
	if _, offered := ver.Tool(c.Tool); !offered {
		return &pipeline.Intercept{Action: pipeline.GateSetResult, Error: fmt.Sprintf("tool %q is not available to this agent", c.Tool)}
	}
	if err := w.schemas.check(params[c.Tool], c.Arguments); err != nil {
		return &pipeline.Intercept{Action: pipeline.GateSetResult, Error: fmt.Sprintf("invalid arguments for %s: %v", c.Tool, err)}
	}
	return nil
}

// policy is the configuration's voice at ToolGate for one call, as ver, the
// run's agent version, pinned it: the frontend and agent executors and the
// tool's permission.
func policy(ver *versions.Version, c pipeline.ToolCall) []pipeline.Intercept {
	t, _ := ver.Tool(c.Tool)
	var out []pipeline.Intercept
	if t.Executor.Frontend != nil {
		out = append(out, pipeline.Intercept{Action: pipeline.GateSuspend, Reason: "a frontend tool: the client supplies the result"})
	}
	if t.Executor.Agent != "" {
		out = append(out, pipeline.Intercept{Action: pipeline.GateSuspend, Reason: fmt.Sprintf("waits for child run %s of agent %s", pipeline.ChildRunID(c.RunID, c.ID), t.Executor.Agent)})
	}
	switch t.Permission {
	case config.PermissionDeny:
		out = append(out, pipeline.Intercept{Action: pipeline.GateBlock, Reason: fmt.Sprintf("tool %q is denied by policy", c.Tool)})
	case config.PermissionAsk:
		if ask, why := asks(ver, c); ask {
			out = append(out, pipeline.Intercept{Action: pipeline.GateSuspend, Reason: why})
		}
	}
	return out
}

// asks evaluates a tool's ask_when. No condition asks always; a condition
// that cannot be evaluated on these arguments asks too: when in doubt, a
// person decides.
func asks(ver *versions.Version, c pipeline.ToolCall) (bool, string) {
	cond, ok := ver.AskWhen(c.Tool)
	if !ok {
		return true, fmt.Sprintf("tool %q needs approval", c.Tool)
	}
	ask, err := cond.Eval(c.Arguments)
	if err != nil {
		return true, fmt.Sprintf("tool %q needs approval (its condition could not be evaluated: %v)", c.Tool, err)
	}
	return ask, fmt.Sprintf("tool %q needs approval: %s", c.Tool, cond)
}
