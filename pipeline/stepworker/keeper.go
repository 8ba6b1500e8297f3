package stepworker

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/store"
)

// keeper is plugin.Keeper for the phases of a step this worker infers:
// it keeps a state key as the step's claim (store.KeepState), and a claim
// found lost stops the step, as a refused renewal does (runStep), so that
// nothing is committed and the run is not failed for it.
type keeper struct {
	w    *Worker
	run  pipeline.Run // as claimed
	lost context.CancelCauseFunc
}

func (k keeper) Keep(ctx context.Context, key string, expect, value json.RawMessage, typ pipeline.EventType, data any) (json.RawMessage, error) {
	kept, _, err := k.w.store.KeepState(ctx, k.run.ID, k.run.Step, k.run.LeaseOwner,
		store.Keep{Key: key, Expect: expect, Value: value, Event: typ, Data: data}, k.w.now())
	if errors.Is(err, store.ErrLeaseLost) {
		k.lost(errLeaseLost)
	}
	return kept, err
}
