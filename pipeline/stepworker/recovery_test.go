package stepworker_test

import (
	"testing"

	"github.com/stepwise-run/stepwise/internal/pipelinetest"
)

// A step worker killed between any two of its Redis writes or publishes —
// in the Step, StepEnd or decision handler, the sweeper or the reconcile —
// is replaced, and every run ends exactly as it would have undisturbed.
func TestStepWorker_a_run_survives_a_crash_at_every_operation(t *testing.T) {
	if testing.Short() {
		t.Skip("drives each scenario once per operation; skipped with -short")
	}
	pipelinetest.CutEverywhere(t, pipelinetest.StepWorker)
}

// Every handler is idempotent and order-blind: each message delivered twice,
// or the messages delivered newest first, change nothing in how a run ends.
func TestStepWorker_duplicate_and_reordered_messages_change_nothing(t *testing.T) {
	pipelinetest.Disorder(t)
}
