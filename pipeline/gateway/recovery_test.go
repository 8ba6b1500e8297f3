package gateway_test

import (
	"testing"

	"github.com/stepwise-run/stepwise/internal/tooling/pipelinetest"
)

// A gateway killed between any two of its Redis writes or publishes while
// it creates a run never orphans it: a run it wrote is started by the
// sweeper even if its client never hears back, and one it did not write is
// created by the client's retry.
func TestGateway_a_run_survives_a_crash_at_every_operation_of_its_creation(t *testing.T) {
	if testing.Short() {
		t.Skip("drives each scenario once per operation; skipped with -short")
	}
	pipelinetest.CutEverywhere(t, pipelinetest.Gateway)
}
