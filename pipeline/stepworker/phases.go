package stepworker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/plugin"
	"github.com/stepwise-run/stepwise/pipeline/store"
)

// phases runs the plugin phases of one step in this process: it carries the
// plugin context and the actions scheduled for phases still to come.
type phases struct {
	set     *plugin.Set
	pc      *plugin.Context
	pending []plugin.Action
}

func (w *Worker) phases(ctx context.Context, run pipeline.Run, msgs []pipeline.Message) (*phases, error) {
	set := w.plugins[run.CurrentAgent]
	state := plugin.State{}
	if !set.Empty() { // without hooks nothing reads or writes the state: spare the round trip
		var err error
		if state, err = w.store.RunState(ctx, run.ID); err != nil {
			return nil, err
		}
		// Hooks are anyone's code: they get a copy of the conversation, which
		// the store shares with its cache (store.Claimed).
		msgs = slices.Clone(msgs)
	}
	return &phases{set: set, pc: &plugin.Context{Run: run, State: state, Messages: msgs}}, nil
}

// run runs phase p: its hooks and its actions' convergence loop.
func (ph *phases) run(ctx context.Context, p pipeline.Phase) error {
	ph.pc.Phase = p
	later, err := ph.set.Run(ctx, ph.pc, ph.pending)
	ph.pending = later
	if err != nil {
		return &phaseError{p, err}
	}
	return nil
}

// phaseError is a phase that failed: its hooks or actions, not the reads
// around them (a run's state that could not be loaded is not the run's
// fault, and is read again).
type phaseError struct {
	phase pipeline.Phase
	err   error
}

func (e *phaseError) Error() string { return fmt.Sprintf("phase %s: %v", e.phase, e.err) }
func (e *phaseError) Unwrap() error { return e.err }

// gateCall runs ToolGate for one call and returns the intercepts plugins
// scheduled for it.
func (ph *phases) gateCall(ctx context.Context, c pipeline.ToolCall) ([]pipeline.Intercept, error) {
	ph.pc.Call, ph.pc.Intercepts = &c, nil
	defer func() { ph.pc.Call = nil }()
	if err := ph.run(ctx, pipeline.PhaseToolGate); err != nil {
		return nil, err
	}
	return ph.pc.Intercepts, nil
}

// updates are the persistent state updates of the phases run so far.
func (ph *phases) updates() []pipeline.StateUpdate { return ph.set.PersistentUpdates(ph.pc.Updates) }

// strand ends this process's phase run: the actions still pending, aimed
// at a phase that does not come in it, are recorded as failed, and it
// returns every action that failed in it (an action.failed event each,
// written with the phases' state).
func (ph *phases) strand() []pipeline.FailedAction {
	ph.set.Strand(ph.pc, ph.pending)
	ph.pending = nil
	return ph.pc.Failed
}

// stepEnd runs the StepEnd phase over a step's terminal calls and returns
// its persistent state updates and the actions that failed in it.
func (w *Worker) stepEnd(ctx context.Context, run pipeline.Run, calls []pipeline.ToolCall) ([]pipeline.StateUpdate, []pipeline.FailedAction, error) {
	if w.plugins[run.CurrentAgent].Empty() {
		return nil, nil, nil // no hook, so nothing to run: no action can be scheduled
	}
	ph, err := w.phases(ctx, run, nil)
	if err != nil {
		return nil, nil, err
	}
	ph.pc.Calls = calls
	if err := ph.run(ctx, pipeline.PhaseStepEnd); err != nil {
		return nil, nil, err
	}
	failed := ph.strand()
	return ph.updates(), failed, nil
}

// runEnd runs the RunEnd phase of a done run, once: a run whose state
// holds plugin.RunEndKey has had it. Its persistent state updates and the
// actions that failed in it are committed with that mark
// (store.CommitRunEnd); when another worker committed its RunEnd first
// (two reconciles of the end at once), this one's are dropped.
func (w *Worker) runEnd(ctx context.Context, run pipeline.Run) error {
	if w.plugins[run.CurrentAgent].Empty() {
		return nil
	}
	ph, err := w.phases(ctx, run, nil)
	if err != nil {
		return err
	}
	if _, ran := ph.pc.State[plugin.RunEndKey.Name]; ran {
		return nil
	}
	if err := ph.run(ctx, pipeline.PhaseRunEnd); err != nil {
		return err
	}
	failed := ph.strand()
	now := w.now()
	mark := pipeline.StateUpdate{Key: plugin.RunEndKey.Name, Value: json.RawMessage(strconv.FormatInt(now.UnixMilli(), 10))}
	err = w.store.CommitRunEnd(ctx, run.ID, mark, ph.updates(), failed, now)
	if errors.Is(err, store.ErrStale) {
		return nil
	}
	return err
}
