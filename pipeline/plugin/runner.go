package plugin

import (
	"context"
	"errors"
	"fmt"

	"github.com/stepwise-run/stepwise/pipeline"
)

// MaxRounds is the default limit of a phase's convergence loop.
const MaxRounds = 16

// ErrPhaseRunLoopExceeded: a phase's actions kept scheduling actions past
// the round limit (the seeds' PhaseRunLoopExceeded). The run ends with error.
var ErrPhaseRunLoopExceeded = errors.New("phase run loop exceeded")

// runtimeOnly is the Set a nil Set stands for.
var runtimeOnly = func() *Set {
	reg := newRegistrar()
	registerRuntimeActions(reg)
	return &Set{reg: reg, MaxRounds: MaxRounds}
}()

// FailedActionsKey is the persistent state key that lists the actions whose
// handler failed.
var FailedActionsKey = Key[[]FailedAction]{Name: "runtime.failed_actions", Persistent: true}

// Set is the plugins of one agent, registered. It is immutable and safe for
// concurrent use. A nil Set has no plugins: its phases run no hooks and
// only the runtime's built-in actions.
type Set struct {
	reg       *Registrar
	MaxRounds int
}

// Empty reports whether the set has no hooks: its phases can only run
// actions scheduled from elsewhere, so a worker need not load the run's
// state for it.
func (s *Set) Empty() bool {
	if s == nil {
		return true
	}
	for _, hooks := range s.reg.hooks {
		if len(hooks) > 0 {
			return false
		}
	}
	return true
}

// Persistent reports whether key is checkpointed with the run.
func (s *Set) Persistent(key string) bool {
	return key == FailedActionsKey.Name || s.reg.persistent[key]
}

// PersistentUpdates keeps the updates of persistent keys, in order: what a
// worker commits with the step.
func (s *Set) PersistentUpdates(updates []Update) []Update {
	var out []Update
	for _, u := range updates {
		if s.Persistent(u.Key) {
			out = append(out, u)
		}
	}
	return out
}

// Run runs phase pc.Phase: its hooks, then the convergence loop of the
// actions scheduled for it — those in pending (scheduled by an earlier phase
// in this process) and those its hooks and handlers schedule. Actions for
// other phases are returned, for the phase they target. State updates are
// applied to pc.State and recorded in pc.Updates; failed handlers in
// pc.Failed (and the failed-actions key). ctx ends the loop early.
func (s *Set) Run(ctx context.Context, pc *Context, pending []Action) (later []Action, err error) {
	if s == nil {
		s = runtimeOnly
	}
	var now []Action
	route := func(acts []Action) {
		for _, a := range acts {
			if spec, ok := s.reg.actions[a.Key]; ok && spec.phase == pc.Phase {
				now = append(now, a)
				continue
			}
			later = append(later, a)
		}
	}
	route(pending)
	for _, h := range s.reg.hooks[pc.Phase] {
		cmd, err := h(ctx, pc)
		if err != nil {
			return later, fmt.Errorf("%s hook: %w", pc.Phase, err)
		}
		s.apply(pc, cmd)
		route(cmd.Actions)
	}
	for round := 1; len(now) > 0; round++ {
		if round > s.MaxRounds {
			return later, fmt.Errorf("%w: %s still had %d actions after %d rounds (first: %s)",
				ErrPhaseRunLoopExceeded, pc.Phase, len(now), s.MaxRounds, now[0].Key)
		}
		if err := ctx.Err(); err != nil {
			return later, err
		}
		batch := now
		now = nil
		for _, a := range batch {
			cmd, err := s.reg.actions[a.Key].handler(ctx, pc, a.Payload)
			if err != nil {
				s.fail(pc, a.Key, err)
				continue
			}
			s.apply(pc, cmd)
			route(cmd.Actions)
		}
	}
	return s.unknown(pc, later), nil
}

// unknown records actions no plugin handles as failed, keeping the rest.
func (s *Set) unknown(pc *Context, acts []Action) []Action {
	var keep []Action
	for _, a := range acts {
		if _, ok := s.reg.actions[a.Key]; !ok {
			s.fail(pc, a.Key, errors.New("no handler is registered for this action"))
			continue
		}
		keep = append(keep, a)
	}
	return keep
}

func (s *Set) apply(pc *Context, cmd Command) {
	if pc.State == nil {
		pc.State = State{}
	}
	pc.State.apply(cmd.Updates)
	pc.Updates = append(pc.Updates, cmd.Updates...)
}

func (s *Set) fail(pc *Context, key string, err error) {
	f := FailedAction{Phase: pc.Phase, Key: key, Error: err.Error()}
	pc.Failed = append(pc.Failed, f)
	all, _, _ := FailedActionsKey.Get(pc.State)
	var cmd Command
	_ = FailedActionsKey.Set(&cmd, append(all, f))
	s.apply(pc, cmd)
}

// Phase returns the phase an action key runs in, and whether it is known.
func (s *Set) Phase(key string) (pipeline.Phase, bool) {
	if s == nil {
		s = runtimeOnly
	}
	a, ok := s.reg.actions[key]
	return a.phase, ok
}
