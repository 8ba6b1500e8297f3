package stepworker

import (
	"context"
	"errors"
	"time"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/store"
	"github.com/stepwise-run/stepwise/pipeline/versions"
)

// regate is ToolGate judging a call of a sequential step again, as the
// seeds' sequential mode does: the call about to be dispatched, once the
// calls before it committed (a plugin tool's state command among them),
// is gated on the run's plugin state as it is now. It runs only for agents
// whose plugins hook ToolGate, and only for a call with calls before it
// that is not dispatched yet; the hooks see no Messages. The configuration's
// voices are as at the commit (they allowed the call); a plugin's intercept
// other than allow is written with the phase's state updates and failed
// actions (store.GateCall: a block cancels the calls after it, and the step's
// end ends the run blocked), and regate reports true: the caller reads the
// run again. An allow writes nothing: the phase's state updates are not
// kept. A hook error is a *phaseError.
func (w *Worker) regate(ctx context.Context, ver *versions.Version, run pipeline.Run, calls []pipeline.ToolCall, now time.Time) (bool, error) {
	if !ver.Agent.Sequential() || !w.plugins[run.CurrentAgent].HasHooks(pipeline.PhaseToolGate) {
		return false, nil
	}
	next := dispatchable(ver.Agent, calls)
	if len(next) != 1 || next[0] == 0 {
		return false, nil
	}
	i := next[0]
	c := calls[i]
	if c.Status != pipeline.CallNew || w.dispatched(c, now) {
		return false, nil
	}
	ph, err := w.phases(ctx, run, nil)
	if err != nil {
		return false, err
	}
	fromPlugins, err := ph.gateCall(ctx, c)
	if err != nil {
		return false, err
	}
	in := pipeline.CombineIntercepts(append(policy(ver, c), fromPlugins...)...)
	d := w.gated(ver, c, in, now)
	if d.Status == pipeline.CallNew {
		return false, nil
	}
	o := store.CallOutcome{Status: d.Status, Result: d.Result, Error: d.Error, Parking: d.Parking, State: ph.updates(), Failed: ph.strand()}
	var cancel []string
	if in.Action == pipeline.GateBlock {
		for _, later := range calls[i+1:] {
			cancel = append(cancel, later.ID)
		}
	}
	_, err = w.store.GateCall(ctx, run.ID, c.ID, o, in.Action, cancel, blockedAt(c.ID), now)
	if errors.Is(err, store.ErrStale) {
		return true, nil // the call moved on meanwhile: read it again
	}
	return err == nil, err
}
