package stop

import (
	"cmp"
	"encoding/json"
	"slices"
	"time"

	"github.com/stepwise-run/stepwise/pipeline"
)

// State is what Evaluate looks at when step Step has ended. See the package
// documentation for exactly which field each condition reads.
type State struct {
	// Step is the step that just ended, 0-based (pipeline.Run.Step).
	Step int
	// StartedAt is when the run started and Now is the time of this StepEnd;
	// only timeout reads them. The run has no separate start time, so the
	// step worker passes pipeline.Run.CreatedAt and its own clock.
	StartedAt, Now time.Time
	// Usage is the run's cumulative token usage, this step's inference
	// included (pipeline.Run.Usage); only token_budget reads it.
	Usage pipeline.Usage
	// Steps are the ended steps, oldest first, the last being Step. Only the
	// last NeedsHistory of them are read; older ones may be left out.
	Steps []StepRecord
}

// StepRecord is one ended step as the conditions see it.
type StepRecord struct {
	// Step is the step's number, 0-based.
	Step int
	// AssistantText is the content of the assistant message of the step.
	// Only content_match reads it, and only for the step that just ended.
	AssistantText string
	// Calls are the step's tool calls in call order (pipeline.ToolCall.Index).
	Calls []Call
}

// Call is one tool call of a step: what stop_on_tool, loop_detection and
// consecutive_errors read.
type Call struct {
	// Tool is the tool's name.
	Tool string
	// Arguments are the arguments the model gave; compared in canonical form.
	Arguments json.RawMessage
	// Status is the call's final status; only failed counts as an error.
	Status pipeline.ToolCallStatus
}

// CallOf returns the parts of a tool-call record the conditions read. For a
// call the model's arguments were replaced on (pass_decision_to_tool), the
// arguments the model gave (OrigArgs) are used, so loop detection compares
// what the model asked for.
func CallOf(tc pipeline.ToolCall) Call {
	args := tc.Arguments
	if len(tc.OrigArgs) > 0 {
		args = tc.OrigArgs
	}
	return Call{Tool: tc.Tool, Arguments: args, Status: tc.Status}
}

// History builds the records of the n steps ending with step (step-n+1 …
// step, not below 0), oldest first, from tool-call records of the run:
// either all of them (store RunCalls) or just those of these steps, in any
// order. Each record's calls are in Index order. AssistantText is left
// empty: set it on the last record, the only one Evaluate reads it from.
// n <= 0 returns nil. calls is not modified.
func History(calls []pipeline.ToolCall, step, n int) []StepRecord {
	if n <= 0 || step < 0 {
		return nil
	}
	first := max(step-n+1, 0)
	out := make([]StepRecord, step-first+1)
	for i := range out {
		out[i].Step = first + i
	}
	sorted := slices.Clone(calls)
	slices.SortStableFunc(sorted, func(a, b pipeline.ToolCall) int {
		return cmp.Compare(a.Index, b.Index)
	})
	for _, tc := range sorted {
		if tc.Step < first || tc.Step > step {
			continue
		}
		r := &out[tc.Step-first]
		r.Calls = append(r.Calls, CallOf(tc))
	}
	return out
}
