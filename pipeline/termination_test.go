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
