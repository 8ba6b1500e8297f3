package store

import (
	"context"
	"fmt"
	"time"

	"github.com/stepwise-run/stepwise/pipeline"
)

// CommitRunEnd commits what the RunEnd phase of a done run left, once:
// the persistent state updates, an action.failed event per failed action
// (at the run's last step), and mark, the state key that says RunEnd has
// run (its value the caller's). ErrStale when mark is set already (RunEnd
// ran and committed: the caller's updates are dropped) or the run is not
// done; ErrNotFound when there is no such run. The state lives as long as
// the run's record.
func (s *Store) CommitRunEnd(ctx context.Context, runID string, mark pipeline.StateUpdate, updates []pipeline.StateUpdate, failed []pipeline.FailedAction, now time.Time) error {
	if mark.Key == "" || len(mark.Value) == 0 {
		return fmt.Errorf("%w: RunEnd's mark needs a key and a value", ErrInvalid)
	}
	entries, err := failedEntries(-1, "", failed, now)
	if err != nil {
		return err
	}
	what := fmt.Sprintf("commit RunEnd of run %s", runID)
	_, err = s.call(ctx, s.scripts.commitRunEnd, what, []string{s.runKey(runID), s.eventsKey(runID)}, struct {
		Done    pipeline.RunStatus `json:"done"`
		Mark    stateUpdate        `json:"mark"`
		Updates []stateUpdate      `json:"updates"`
		Failed  []entry            `json:"failed"`
	}{pipeline.RunDone, stateUpdate{mark.Key, string(mark.Value)}, stateUpdates(updates), entries})
	return err
}
