package demo

import (
	"strings"
	"testing"

	"github.com/stepwise-run/stepwise/pipeline"
)

func TestCheck_names_everything_a_run_got_wrong(t *testing.T) {
	sc := scenarios[1] // flaky: 2 steps, 5 messages, calls failed then succeeded
	var r runView
	r.Status, r.Step = pipeline.RunDone, 0
	r.Termination = pipeline.Termination{Reason: pipeline.ReasonError, Detail: "boom"}
	r.ToolCalls = append(r.ToolCalls, struct {
		Status pipeline.ToolCallStatus `json:"status"`
	}{pipeline.CallSucceeded})
	got := check(sc, r, 3)
	for _, want := range []string{"ended done/error (boom)", "ended at step 0, want 1", "has 3 messages, want 5", "has 1 tool calls, want 2"} {
		if !strings.Contains(got, want) {
			t.Errorf("check says %q, want it to mention %q", got, want)
		}
	}
	r.Step, r.Termination = 1, pipeline.Termination{Reason: pipeline.ReasonNaturalEnd}
	r.ToolCalls = append(r.ToolCalls, r.ToolCalls[0])
	if got := check(sc, r, 5); got != "call 0 is succeeded, want failed" {
		t.Errorf("check = %q", got)
	}
}
