package pipeline_test

import (
	"errors"
	"testing"

	"github.com/stepwise-run/stepwise/pipeline"
)

var runStatuses = []pipeline.RunStatus{pipeline.RunCreated, pipeline.RunRunning, pipeline.RunWaiting, pipeline.RunDone}

func TestRunStatus_transitions_follow_the_seeds_table(t *testing.T) {
	allowed := map[[2]pipeline.RunStatus]bool{
		{pipeline.RunCreated, pipeline.RunRunning}: true,
		{pipeline.RunCreated, pipeline.RunDone}:    true,
		{pipeline.RunRunning, pipeline.RunWaiting}: true,
		{pipeline.RunRunning, pipeline.RunDone}:    true,
		{pipeline.RunWaiting, pipeline.RunRunning}: true,
		{pipeline.RunWaiting, pipeline.RunDone}:    true,
	}
	for _, from := range runStatuses {
		for _, to := range runStatuses {
			want := allowed[[2]pipeline.RunStatus{from, to}]
			t.Run(string(from)+"→"+string(to), func(t *testing.T) {
				if got := from.CanTransition(to); got != want {
					t.Fatalf("CanTransition = %v, want %v", got, want)
				}
			})
		}
	}
}

func TestRunStatus_only_done_is_final(t *testing.T) {
	for _, s := range runStatuses {
		if s.Final() != (s == pipeline.RunDone) {
			t.Errorf("%s.Final() = %v", s, s.Final())
		}
	}
}

func TestParseRunStatus(t *testing.T) {
	for _, s := range runStatuses {
		if got, err := pipeline.ParseRunStatus(string(s)); err != nil || got != s {
			t.Errorf("ParseRunStatus(%q) = %q, %v", s, got, err)
		}
	}
	if _, err := pipeline.ParseRunStatus("paused"); !errors.Is(err, pipeline.ErrUnknownStatus) {
		t.Errorf("ParseRunStatus(paused) error = %v, want ErrUnknownStatus", err)
	}
}
