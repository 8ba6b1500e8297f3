package store

import (
	"time"

	"github.com/stepwise-run/stepwise/pipeline"
)

// failedEntries are the action.failed entries of failed (data: the
// FailedAction), as a script's argument takes them (lib.lua's
// emit_failed): never null.
func failedEntries(step int, callID string, failed []pipeline.FailedAction, now time.Time) ([]entry, error) {
	out := make([]entry, len(failed))
	for i, f := range failed {
		e, err := newEntry(step, callID, pipeline.EventActionFailed, now, f)
		if err != nil {
			return nil, err
		}
		out[i] = e
	}
	return out, nil
}
