package stepworker

import (
	"context"
	"errors"
	"fmt"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/versions"
)

// versionOf returns the version of its agent run is pinned to
// (run.AgentVersion): a map lookup once this worker knows it. A run
// created before versions existed has none and follows the configuration.
// A version lost from Redis is versions.ErrLost (see lostVersion).
func (w *Worker) versionOf(ctx context.Context, run pipeline.Run) (*versions.Version, error) {
	if run.AgentVersion == "" {
		if v, ok := w.versions.Current(run.CurrentAgent); ok {
			return v, nil
		}
		return nil, fmt.Errorf("%w: agent %q is not configured", versions.ErrLost, run.CurrentAgent)
	}
	v, err := w.versions.Get(ctx, run.AgentVersion)
	if err != nil {
		return nil, fmt.Errorf("run %s of agent %s: %w", run.ID, run.CurrentAgent, err)
	}
	return v, nil
}

// lostVersion reports whether err says a run's version cannot be had: the
// run ends with an error naming it rather than go on under another
// definition. Any other error (Redis unreachable) is retried.
func lostVersion(err error) bool {
	return errors.Is(err, versions.ErrLost)
}
