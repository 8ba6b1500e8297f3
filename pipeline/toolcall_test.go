package pipeline_test

import (
	"errors"
	"testing"

	"github.com/stepwise-run/stepwise/pipeline"
)

var callStatuses = []pipeline.ToolCallStatus{
	pipeline.CallNew, pipeline.CallRunning, pipeline.CallSuspended, pipeline.CallResuming,
	pipeline.CallSucceeded, pipeline.CallFailed, pipeline.CallCancelled,
}

func TestToolCallStatus_transitions_follow_the_seeds_table(t *testing.T) {
	n, r, s, rs := pipeline.CallNew, pipeline.CallRunning, pipeline.CallSuspended, pipeline.CallResuming
	ok, f, c := pipeline.CallSucceeded, pipeline.CallFailed, pipeline.CallCancelled
	allowed := map[[2]pipeline.ToolCallStatus]bool{
		{n, r}: true, {n, s}: true, {n, ok}: true, {n, f}: true, {n, c}: true,
		{r, ok}: true, {r, f}: true, {r, c}: true, {r, s}: true,
		{s, rs}: true, {s, c}: true,
		{rs, r}: true, {rs, s}: true, {rs, ok}: true, {rs, f}: true, {rs, c}: true,
	}
	for _, from := range callStatuses {
		for _, to := range callStatuses {
			want := allowed[[2]pipeline.ToolCallStatus{from, to}]
			t.Run(string(from)+"→"+string(to), func(t *testing.T) {
				if got := from.CanTransition(to); got != want {
					t.Fatalf("CanTransition = %v, want %v", got, want)
				}
			})
		}
	}
}

func TestToolCallStatus_terminal_states(t *testing.T) {
	for _, s := range callStatuses {
		want := s == pipeline.CallSucceeded || s == pipeline.CallFailed || s == pipeline.CallCancelled
		if s.Terminal() != want {
			t.Errorf("%s.Terminal() = %v, want %v", s, s.Terminal(), want)
		}
	}
}

func TestParseToolCallStatus(t *testing.T) {
	for _, s := range callStatuses {
		if got, err := pipeline.ParseToolCallStatus(string(s)); err != nil || got != s {
			t.Errorf("ParseToolCallStatus(%q) = %q, %v", s, got, err)
		}
	}
	if _, err := pipeline.ParseToolCallStatus("done"); !errors.Is(err, pipeline.ErrUnknownStatus) {
		t.Errorf("ParseToolCallStatus(done) error = %v, want ErrUnknownStatus", err)
	}
}
