package plugin

import (
	"context"
	"encoding/json"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/model"
)

// Context is what a hook or handler sees of the phase it runs in. The
// fields a phase does not have are nil. Hooks must not change it directly:
// they return a Command, and the built-in actions change the request, the
// proposed calls, the intercepts or the result.
type Context struct {
	Phase    pipeline.Phase
	Run      pipeline.Run
	State    State              // the run's state, with this phase's updates so far
	Messages []pipeline.Message // the conversation so far (step worker phases)

	Request  *Request            // BeforeInference: the inference about to be made
	Response *model.Response     // AfterInference: the model's answer, whose calls actions may change
	Call     *pipeline.ToolCall  // ToolGate, BeforeToolExecute, AfterToolExecute: the call
	Result   *Result             // AfterToolExecute: the call's outcome, which actions may change
	Calls    []pipeline.ToolCall // StepEnd: the step's calls, all terminal

	// Model is the run's model, for a plugin that asks it something
	// besides the step's inference (compaction's summaries), and Keep
	// writes a state key at once; both only in the phases of the step
	// worker's Step handler (run_start … tool_gate), nil elsewhere.
	Model model.Model
	Keep  Keeper

	// Set by the runner: what the phase collected.
	Intercepts []pipeline.Intercept // ToolGate: intercepts scheduled for the call
	Skip       string               // BeforeInference: non-empty skips inference; the run ends behavior_requested
	End        string               // AfterInference: non-empty ends the run behavior_requested once the step commits
	Drop       []int                // AfterInference: indexes in Response.ToolCalls of the calls not to make
	Updates    []Update             // every state update of the phase, in order
	Failed     []FailedAction       // handlers that failed in the phase
}

// Request is an inference about to be made, as BeforeInference actions
// shape it.
type Request struct {
	System   string
	Messages []pipeline.Message // context messages are appended here, not to the run's history
	Tools    []model.ToolSpec
	Override model.Override
}

// Result is a tool call's outcome as AfterToolExecute sees it.
type Result struct {
	Status pipeline.ToolCallStatus
	Value  json.RawMessage
	Error  string
}

// FailedAction records an action that failed or could not run where it
// was aimed; it is not retried.
type FailedAction = pipeline.FailedAction

// Keeper writes one persistent state key of the run at once, not with the
// step's commit: for what a step redelivered before its commit must find
// rather than make again (a summary a model wrote). Keep sets key to value
// if it still holds expect (nil: unset) and appends an event of type typ
// with data, in one operation; it returns what the key holds afterwards —
// value, or what an earlier writer kept, which it leaves alone. It fails
// when the step is no longer this worker's (its step then stops).
type Keeper interface {
	Keep(ctx context.Context, key string, expect, value json.RawMessage, typ pipeline.EventType, data any) (json.RawMessage, error)
}
