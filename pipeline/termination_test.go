package pipeline_test

import (
	"testing"

	"github.com/stepwise-run/stepwise/pipeline"
)

func TestTerminationReason_only_suspended_leaves_the_run_waiting(t *testing.T) {
	reasons := []pipeline.TerminationReason{
		pipeline.ReasonNaturalEnd, pipeline.ReasonBehaviorRequested, pipeline.ReasonStopped,
		pipeline.ReasonCancelled, pipeline.ReasonBlocked, pipeline.ReasonSuspended, pipeline.ReasonError,
	}
	for _, r := range reasons {
		want := pipeline.RunDone
		if r == pipeline.ReasonSuspended {
			want = pipeline.RunWaiting
		}
		if got := r.RunStatus(); got != want {
			t.Errorf("%s.RunStatus() = %s, want %s", r, got, want)
		}
	}
}

func TestPhases_are_nine_in_order_with_their_process(t *testing.T) {
	phases := pipeline.Phases()
	if len(phases) != 9 || phases[0] != pipeline.PhaseRunStart || phases[4] != pipeline.PhaseToolGate || phases[8] != pipeline.PhaseRunEnd {
		t.Fatalf("Phases() = %v", phases)
	}
	for _, p := range phases {
		want := "stepworker"
		if p == pipeline.PhaseBeforeToolExecute || p == pipeline.PhaseAfterToolExecute {
			want = "toolworker"
		}
		if p.Process() != want {
			t.Errorf("%s.Process() = %s, want %s", p, p.Process(), want)
		}
	}
}
