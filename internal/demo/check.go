package demo

import (
	"fmt"
	"strings"

	"github.com/stepwise-run/stepwise/pipeline"
)

// runView is the part of GET /v1/runs/{id} the demo checks.
type runView struct {
	RunID       string               `json:"run_id"`
	Status      pipeline.RunStatus   `json:"status"`
	Step        int                  `json:"step"`
	Termination pipeline.Termination `json:"termination"`
	ToolCalls   []struct {
		Status pipeline.ToolCallStatus `json:"status"`
	} `json:"tool_calls"`
}

// check returns what is wrong with a finished run, or "".
func check(sc scenario, r runView, messages int) string {
	var bad []string
	if r.Status != pipeline.RunDone || r.Termination.Reason != pipeline.ReasonNaturalEnd {
		bad = append(bad, fmt.Sprintf("ended %s/%s (%s), want done/natural_end", r.Status, r.Termination.Reason, r.Termination.Detail))
	}
	if r.Step != sc.steps-1 {
		bad = append(bad, fmt.Sprintf("ended at step %d, want %d", r.Step, sc.steps-1))
	}
	if messages != sc.messages {
		bad = append(bad, fmt.Sprintf("has %d messages, want %d", messages, sc.messages))
	}
	if len(r.ToolCalls) != len(sc.callState) {
		bad = append(bad, fmt.Sprintf("has %d tool calls, want %d", len(r.ToolCalls), len(sc.callState)))
	} else {
		for i, c := range r.ToolCalls {
			if c.Status != sc.callState[i] {
				bad = append(bad, fmt.Sprintf("call %d is %s, want %s", i, c.Status, sc.callState[i]))
			}
		}
	}
	return strings.Join(bad, "; ")
}
