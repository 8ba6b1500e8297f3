package stepworker

import (
	"context"
	"errors"
	"sync"
)

// inferring holds a way to stop each inference this worker runs, by run,
// so that a run that ends meanwhile (cancelled) stops taking a pool slot
// at once: the cancel's handler stops the run's inference when it runs on
// this worker (cancelRun), and the renewal of the step's lease, which is
// refused once the run is done, stops it on any other worker (runStep).
// ADR 0048. Safe for concurrent use.
type inferring struct {
	mu   sync.Mutex
	runs map[string][]*context.CancelCauseFunc
}

// errRunEnded is the cause of an inference stopped because its run ended.
var errRunEnded = errors.New("the run ended while its step was inferring")

// errLeaseLost is the cause of an inference stopped because its claim was
// lost: its outcome would be dropped.
var errLeaseLost = errors.New("the step's lease was lost while inferring")

func newInferring() *inferring {
	return &inferring{runs: map[string][]*context.CancelCauseFunc{}}
}

// start returns a context for an inference of runID, derived from parent,
// and the done to call when the inference is over.
func (in *inferring) start(parent context.Context, runID string) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(parent)
	entry := &cancel
	in.mu.Lock()
	in.runs[runID] = append(in.runs[runID], entry)
	in.mu.Unlock()
	return ctx, func() {
		in.mu.Lock()
		rest := in.runs[runID]
		for i, e := range rest {
			if e == entry {
				rest = append(rest[:i], rest[i+1:]...)
				break
			}
		}
		if len(rest) == 0 {
			delete(in.runs, runID)
		} else {
			in.runs[runID] = rest
		}
		in.mu.Unlock()
		cancel(nil)
	}
}

// stop stops every inference of runID on this worker, for cause.
func (in *inferring) stop(runID string, cause error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	for _, cancel := range in.runs[runID] {
		(*cancel)(cause)
	}
}
