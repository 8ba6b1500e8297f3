package toolworker

import (
	"context"
	"errors"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/store"
	"github.com/stepwise-run/stepwise/pipeline/worker"
)

// errCallCancelled is the cause of an execution stopped because its call
// was cancelled (its run's cancel, mostly) while it ran.
var errCallCancelled = errors.New("the call was cancelled while its tool ran")

// newRunning returns the watch of the calls this worker executes, which
// reads the status of the calls executing longer than a tick in one round
// trip and stops those cancelled meanwhile: their tool's context is
// cancelled (an HTTP request aborted, an MCP server told
// notifications/cancelled, a sleep cut short) and nothing of theirs is
// committed (ADR 0065).
func newRunning(st *store.Store) *worker.Watch[store.CallRef] {
	return worker.NewWatch(worker.WatchTick, func(ctx context.Context, calls []store.CallRef) ([]error, error) {
		statuses, err := st.CallStatuses(ctx, calls)
		if err != nil {
			return nil, err
		}
		causes := make([]error, len(statuses))
		for i, s := range statuses {
			if s == pipeline.CallCancelled {
				causes[i] = errCallCancelled
			}
		}
		return causes, nil
	})
}
