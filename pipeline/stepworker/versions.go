package stepworker

import (
	"context"
	"errors"
	"fmt"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/store"
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

// upgradeOf is the version a resume decision for run, pinned to ver, is
// checked against, and the version the decision moves the run to: with
// runs.upgrade_waiting, a waiting run on another version than its agent's
// current one moves to the current one (pinned, so Redis has it); else
// ver, and "" (it stays).
func (w *Worker) upgradeOf(ctx context.Context, run pipeline.Run, ver *versions.Version) (*versions.Version, string, error) {
	if !w.cfg.Runs.UpgradeWaiting || run.Status != pipeline.RunWaiting {
		return ver, "", nil
	}
	cur, ok := w.versions.Current(run.CurrentAgent)
	if !ok || cur.Hash == ver.Hash {
		return ver, "", nil
	}
	hash, err := w.versions.Pin(ctx, run.CurrentAgent)
	if err != nil {
		return nil, "", err
	}
	return cur, hash, nil
}

// upgradeIf is upgrade for a resume and "" for a cancel: only a resume
// moves a run to another version.
func upgradeIf(action, upgrade string) string {
	if action != store.ActionResume {
		return ""
	}
	return upgrade
}
