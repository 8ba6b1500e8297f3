package stepworker

import (
	"testing"

	"github.com/stepwise-run/stepwise/pipeline"
)

// A custom_id names its run and step unambiguously, a child run's id
// (which holds a dot) too; anything else names no step.
func TestCustomID_is_read_back_to_its_run_and_step(t *testing.T) {
	for _, run := range []pipeline.Run{{ID: "r1", Step: 0, Attempts: 1}, {ID: "parent.call_0_1", Step: 12, Attempts: 3}} {
		id := customID(run)
		if runID, step, ok := stepOf(id); !ok || runID != run.ID || step != run.Step {
			t.Errorf("stepOf(%q) = %q, %d, %v; want %q, %d", id, runID, step, ok, run.ID, run.Step)
		}
	}
	for _, id := range []string{"", "r1", "r1.0", ".0.1", "r1.x.1", "r1.0.x"} {
		if runID, step, ok := stepOf(id); ok {
			t.Errorf("stepOf(%q) = %q, %d; want no step", id, runID, step)
		}
	}
}
