package pipeline_test

import (
	"testing"

	"github.com/stepwise-run/stepwise/pipeline"
)

func TestDeriveRunStatus_matches_the_decision_table(t *testing.T) {
	n, r, s, rs := pipeline.CallNew, pipeline.CallRunning, pipeline.CallSuspended, pipeline.CallResuming
	ok, f, c := pipeline.CallSucceeded, pipeline.CallFailed, pipeline.CallCancelled
	cases := []struct {
		name  string
		calls []pipeline.ToolCallStatus
		want  pipeline.RunStatus
	}{
		{"no calls: the step is done", nil, pipeline.RunDone},
		{"all terminal: done", []pipeline.ToolCallStatus{ok, f, c}, pipeline.RunDone},
		{"one running: running", []pipeline.ToolCallStatus{ok, r}, pipeline.RunRunning},
		{"resuming: running", []pipeline.ToolCallStatus{s, rs}, pipeline.RunRunning},
		{"new counts as running", []pipeline.ToolCallStatus{ok, n}, pipeline.RunRunning},
		{"running beats suspended", []pipeline.ToolCallStatus{s, r}, pipeline.RunRunning},
		{"only suspended and terminal: waiting", []pipeline.ToolCallStatus{s, ok, s}, pipeline.RunWaiting},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := pipeline.DeriveRunStatus(tc.calls); got != tc.want {
				t.Fatalf("DeriveRunStatus(%v) = %s, want %s", tc.calls, got, tc.want)
			}
		})
	}
}

// The seeds' timeline t0–t7: tool_A and tool_B need approval, tool_C runs.
func TestDeriveRunStatus_reproduces_the_seeds_timeline(t *testing.T) {
	n, r, s, rs, ok := pipeline.CallNew, pipeline.CallRunning, pipeline.CallSuspended, pipeline.CallResuming, pipeline.CallSucceeded
	timeline := []struct {
		at    string
		calls []pipeline.ToolCallStatus
		want  pipeline.RunStatus
	}{
		{"t0", []pipeline.ToolCallStatus{n, n, n}, pipeline.RunRunning},
		{"t1", []pipeline.ToolCallStatus{s, n, r}, pipeline.RunRunning},
		{"t2", []pipeline.ToolCallStatus{s, s, r}, pipeline.RunRunning},
		{"t3", []pipeline.ToolCallStatus{s, s, ok}, pipeline.RunWaiting},
		{"t4", []pipeline.ToolCallStatus{rs, s, ok}, pipeline.RunRunning},
		{"t5", []pipeline.ToolCallStatus{ok, s, ok}, pipeline.RunWaiting},
		{"t6", []pipeline.ToolCallStatus{ok, rs, ok}, pipeline.RunRunning},
		{"t7", []pipeline.ToolCallStatus{ok, ok, ok}, pipeline.RunDone},
	}
	for _, step := range timeline {
		if got := pipeline.DeriveRunStatus(step.calls); got != step.want {
			t.Errorf("%s: DeriveRunStatus(%v) = %s, want %s", step.at, step.calls, got, step.want)
		}
	}
}
