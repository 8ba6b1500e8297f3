package stepworker

import (
	"errors"
	"fmt"
	"log/slog"
	"testing"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/store"
)

// A custom_id names its run and step unambiguously, a child run's id
// (which holds a dot) too; anything else names no step.
func TestCustomID_is_read_back_to_its_run_and_step(t *testing.T) {
	for _, run := range []pipeline.Run{{ID: "r1", Step: 0, Attempts: 1}, {ID: "parent.call_0_1", Step: 12, Attempts: 3}} {
		id := customID(run, run.Attempts)
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

// A step of a model in batch mode that parked, or could not read its
// answer or park for Redis, is left to its batch or to the sweeper; any
// other failure of its inference fails it.
func TestParked_leaves_a_step_to_its_batch_or_the_sweeper_and_fails_it_otherwise(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	for _, c := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("inference failed: %w", errAwaiting), true},
		{fmt.Errorf("inference failed: %w", fmt.Errorf("%w: %w", errNotParked, store.ErrLeaseLost)), true},
		{fmt.Errorf("inference failed: %w", errors.New("the batch answered with an error: status 400")), false},
	} {
		if got := parked(c.err, log); got != c.want {
			t.Errorf("parked(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
