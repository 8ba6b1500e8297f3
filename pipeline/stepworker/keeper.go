package stepworker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/store"
)

// keeper is plugin.Keeper for the phases of a step this worker infers:
// it keeps a state key as the step's claim (store.KeepState). A keep that
// fails stops the step, as a refused renewal does (runStep): nothing is
// committed, the lease is released and the step is run again, rather than
// inferred without what the plugin meant to keep (compaction's prompt
// would go over its budget) or failing the run for a passing fault.
type keeper struct {
	w    *Worker
	run  pipeline.Run // as claimed
	lost context.CancelCauseFunc
}

func (k keeper) Keep(ctx context.Context, key string, expect, value json.RawMessage, typ pipeline.EventType, data any) (json.RawMessage, error) {
	kept, _, err := k.w.store.KeepState(ctx, k.run.ID, k.run.Step, k.run.LeaseOwner,
		store.Keep{Key: key, Expect: expect, Value: value, Event: typ, Data: data}, k.w.now())
	switch {
	case errors.Is(err, store.ErrLeaseLost):
		k.lost(errLeaseLost)
	case err != nil:
		k.lost(fmt.Errorf("keep plugin state %s: %w", key, err))
	}
	return kept, err
}
