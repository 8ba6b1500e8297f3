package stepworker

import (
	"context"
	"errors"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/store"
	"github.com/stepwise-run/stepwise/pipeline/worker"
)

// errRunEnded is the cause of an inference stopped because its run ended.
var errRunEnded = errors.New("the run ended while its step was inferring")

// errLeaseLost is the cause of an inference stopped because its claim was
// lost: its outcome would be dropped.
var errLeaseLost = errors.New("the step's lease was lost while inferring")

// newInferring returns the watch of the inferences this worker runs, by
// run, so that the model call of a run that ends meanwhile (cancelled) is
// cancelled and its pool slot is free at once: the cancel's handler stops
// the run's inference when it runs on this worker (cancelRun); on any
// other worker the watch, which reads the status of the runs inferring
// longer than a tick in one round trip, stops it within about two ticks
// (ADR 0065). A renewal of the step's lease that is refused stops it too
// (runStep). ADR 0048.
func newInferring(st *store.Store) *worker.Watch[string] {
	return worker.NewWatch(worker.WatchTick, func(ctx context.Context, runIDs []string) ([]error, error) {
		runs, err := st.RunStatuses(ctx, runIDs)
		if err != nil {
			return nil, err
		}
		causes := make([]error, len(runs))
		for i, r := range runs {
			if r.Status == pipeline.RunDone {
				causes[i] = errRunEnded
			}
		}
		return causes, nil
	})
}
