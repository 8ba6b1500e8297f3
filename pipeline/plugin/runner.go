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

// FailedActionsKey is the persistent state key that lists the actions that
// failed (their handler returned an error) or could not run where they
// were aimed (Strand, an unknown key).
var FailedActionsKey = Key[[]FailedAction]{Name: "runtime.failed_actions", Persistent: true}

// RunEndKey marks a run whose RunEnd phase has run and committed; its
// value is when (unix ms). RunEnd does not run again for such a run.
var RunEndKey = Key[int64]{Name: "runtime.run_end", Persistent: true}

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

// Persistent reports whether key is checkpointed with the run (a nil Set:
// the runtime's keys only).
func (s *Set) Persistent(key string) bool {
	return key == FailedActionsKey.Name || key == RunEndKey.Name || s != nil && s.reg.persistent[key]
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
				s.fail(pc, pc.Phase, a.Key, err)
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
			s.fail(pc, pc.Phase, a.Key, errors.New("no handler is registered for this action"))
			continue
		}
		keep = append(keep, a)
	}
	return keep
}

// Apply applies a Command made outside a phase (a plugin tool's) to pc as
// a hook's is applied, and returns its actions, for the phases to come
// (Run's pending).
func (s *Set) Apply(pc *Context, cmd Command) []Action {
	s.apply(pc, cmd)
	return cmd.Actions
}

func (s *Set) apply(pc *Context, cmd Command) {
	if pc.State == nil {
		pc.State = State{}
	}
	pc.State.apply(cmd.Updates)
	pc.Updates = append(pc.Updates, cmd.Updates...)
}

// Strand records as failed the actions a process's phase run leaves
// unrun (what Run returned as later once its last phase ran): each names
// where it was aimed and why it could not run there — in the other worker,
// or in a phase that does not come again in this phase run (an action does
// not carry over to a later step or call). Nothing is dropped silently.
func (s *Set) Strand(pc *Context, acts []Action) {
	if s == nil {
		s = runtimeOnly
	}
	for _, a := range acts {
		phase := s.reg.actions[a.Key].phase // Run failed the unknown ones
		why := fmt.Errorf("aimed at phase %s, which does not come again in this phase run: an action does not carry over to a later step or call", phase)
		if phase.InToolWorker() != pc.Phase.InToolWorker() {
			why = fmt.Errorf("aimed at phase %s, which runs in the %s, not in the %s that scheduled it", phase, worker(phase), worker(pc.Phase))
		}
		s.fail(pc, phase, a.Key, why)
	}
}

func worker(p pipeline.Phase) string {
	if p.InToolWorker() {
		return "tool worker"
	}
	return "step worker"
}

// HasHooks reports whether a plugin hooks phase p.
func (s *Set) HasHooks(p pipeline.Phase) bool { return s != nil && len(s.reg.hooks[p]) > 0 }

// Tool returns the tool a plugin of the set executes under name
// (Registrar.Tool).
func (s *Set) Tool(name string) (Tool, bool) {
	if s == nil {
		return nil, false
	}
	t, ok := s.reg.tools[name]
	return t, ok
}

func (s *Set) fail(pc *Context, phase pipeline.Phase, key string, err error) {
	f := FailedAction{Phase: phase, Key: key, Error: err.Error()}
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
