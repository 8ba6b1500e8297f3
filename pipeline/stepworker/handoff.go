package stepworker

import (
	"encoding/json"
	"fmt"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/config"
	"github.com/stepwise-run/stepwise/pipeline/model"
	"github.com/stepwise-run/stepwise/pipeline/store"
	"github.com/stepwise-run/stepwise/pipeline/versions"
)

// handoffParams is the JSON Schema of every handoff tool: it takes no
// arguments, as the OpenAI Agents SDK's handoffs take none by default.
var handoffParams = json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`)

// handoffSpecs are the handoffs ver, an agent version, offers, as the
// tools the model is told about: transfer_to_<name>, described as the
// version pinned its target's description.
func handoffSpecs(ver *versions.Version) []model.ToolSpec {
	specs := make([]model.ToolSpec, 0, len(ver.Agent.Handoffs))
	for _, to := range ver.Agent.Handoffs {
		specs = append(specs, model.ToolSpec{Name: config.HandoffTool(to), Description: ver.Handoffs[to], Parameters: handoffParams})
	}
	return specs
}

// handoffResult is the result of the call that hands a run to an agent,
// as the OpenAI Agents SDK words it: {"assistant": "<agent>"}.
type handoffResult struct {
	Assistant string `json:"assistant"`
}

// answerHandoff answers, at ToolGate and without running anything, a call
// c of the tool that hands run to the agent to. The first such call of a
// turn (handing: none before it succeeded) succeeds with handoffResult,
// and its commit hands the run off; another of the same turn, or one past
// runs.max_handoffs, fails with an error the model reads, and the run
// stays with the agent that holds it.
func (w *Worker) answerHandoff(run pipeline.Run, c pipeline.ToolCall, to string, handing bool) pipeline.ToolCall {
	c.Gate = pipeline.GateSetResult
	switch limit := w.cfg.Runs.MaxHandoffs; {
	case handing:
		c.Status, c.Error = pipeline.CallFailed, "Multiple handoffs detected, ignoring this one."
	case run.Handoffs >= limit:
		c.Status, c.Error = pipeline.CallFailed, fmt.Sprintf("handoff to %s refused: the run was handed off %d times, as many as runs.max_handoffs allows", to, run.Handoffs)
	default:
		c.Status = pipeline.CallSucceeded
		c.Result, _ = json.Marshal(handoffResult{Assistant: to}) // a struct of one string marshals
	}
	return c
}

// handoffOf is the handoff a step's calls make, as ToolGate left them:
// the call of one of agent's handoff tools that succeeded hands run from
// the agent holding it to that tool's agent. nil: the step hands nothing
// off.
func handoffOf(run pipeline.Run, agent config.Agent, calls []pipeline.ToolCall) *store.Handoff {
	for _, c := range calls {
		if to, ok := agent.HandoffTarget(c.Tool); ok && c.Status == pipeline.CallSucceeded {
			return &store.Handoff{From: run.CurrentAgent, To: to, CallID: c.ID}
		}
	}
	return nil
}

// seenBy is the conversation msgs as agent, holding run, sees it: all of
// it, or with handoff_history last_user what pipeline.SinceHandoff keeps
// of it since the handoff that gave agent the run.
func seenBy(agent config.Agent, run pipeline.Run, msgs []pipeline.Message) []pipeline.Message {
	if agent.HandoffHistory != config.HandoffHistoryLastUser || run.HandoffCall == "" {
		return msgs
	}
	return pipeline.SinceHandoff(msgs, run.HandoffCall)
}
