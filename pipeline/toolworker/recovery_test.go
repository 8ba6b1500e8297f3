package toolworker_test

import (
	"testing"

	"github.com/stepwise-run/stepwise/internal/tooling/pipelinetest"
)

// A tool worker killed between any two of its Redis writes or publishes is
// replaced, and every run ends exactly as it would have undisturbed: no
// call is committed twice and none is lost.
func TestToolWorker_a_run_survives_a_crash_at_every_operation(t *testing.T) {
	if testing.Short() {
		t.Skip("drives each scenario once per operation; skipped with -short")
	}
	pipelinetest.CutEverywhere(t, pipelinetest.ToolWorker)
}

// A tool worker whose one Redis write or publish fails, and which goes on
// as its code does, leaves nothing undone: every run ends as it would
// have undisturbed.
func TestToolWorker_a_run_survives_one_failed_operation_anywhere(t *testing.T) {
	if testing.Short() {
		t.Skip("drives each scenario once per operation; skipped with -short")
	}
	pipelinetest.FailEverywhere(t, pipelinetest.ToolWorker)
}
