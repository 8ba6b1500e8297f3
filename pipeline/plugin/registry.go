package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/config"
)

// Plugin registers its hooks, actions and state keys.
type Plugin interface {
	Register(r *Registrar) error
}

// Factory builds a plugin from its settings in an agent's configuration
// (agents.<name>.plugins.<plugin>; null when it has none).
type Factory func(settings json.RawMessage) (Plugin, error)

// Hook runs in a phase.
type Hook func(ctx context.Context, pc *Context) (Command, error)

// Handler runs a scheduled action in its phase's convergence loop.
type Handler func(ctx context.Context, pc *Context, payload json.RawMessage) (Command, error)

// Registry maps plugin names to factories. A program builds one (builtin.Registry()
// has stepwise's own) and adds its custom plugins; it is not safe to add
// while workers run.
type Registry struct{ factories map[string]Factory }

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{factories: map[string]Factory{}} }

// Add registers a factory under name, replacing one of the same name.
func (r *Registry) Add(name string, f Factory) { r.factories[name] = f }

// Names lists the registered plugins, sorted.
func (r *Registry) Names() []string {
	out := make([]string, 0, len(r.factories))
	for n := range r.factories {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Build registers the plugins an agent enables (name → settings), in name
// order, on top of the runtime's built-in actions.
func (r *Registry) Build(enabled map[string]json.RawMessage) (*Set, error) {
	reg := newRegistrar()
	registerRuntimeActions(reg)
	names := make([]string, 0, len(enabled))
	for n := range enabled {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		f, ok := r.factories[n]
		if !ok {
			return nil, fmt.Errorf("plugin %q is not in this build (have %v)", n, r.Names())
		}
		p, err := f(enabled[n])
		if err != nil {
			return nil, fmt.Errorf("plugin %s: %w", n, err)
		}
		reg.plugin = n
		if err := p.Register(reg); err != nil {
			return nil, fmt.Errorf("plugin %s: %w", n, err)
		}
	}
	return &Set{reg: reg, MaxRounds: MaxRounds}, nil
}

// ForAgents builds the plugin Set of every agent of cfg.
func (r *Registry) ForAgents(cfg *config.Config) (map[string]*Set, error) {
	out := make(map[string]*Set, len(cfg.Agents))
	for name, a := range cfg.Agents {
		set, err := r.Build(a.Plugins)
		if err != nil {
			return nil, fmt.Errorf("agents.%s.plugins: %w", name, err)
		}
		out[name] = set
	}
	return out, nil
}

// Registrar collects what plugins register.
type Registrar struct {
	plugin     string
	hooks      map[pipeline.Phase][]Hook
	actions    map[string]action
	persistent map[string]bool
	tools      map[string]Tool
}

type action struct {
	phase   pipeline.Phase
	handler Handler
}

func newRegistrar() *Registrar {
	return &Registrar{hooks: map[pipeline.Phase][]Hook{}, actions: map[string]action{}, persistent: map[string]bool{},
		tools: map[string]Tool{}}
}

// Hook adds a hook to phase; hooks of a phase run in registration order.
func (r *Registrar) Hook(phase pipeline.Phase, h Hook) { r.hooks[phase] = append(r.hooks[phase], h) }

// Action registers the handler of the action key, which runs in phase.
// Registering a key twice is an error.
func (r *Registrar) Action(key string, phase pipeline.Phase, h Handler) error {
	if _, dup := r.actions[key]; dup {
		return fmt.Errorf("action %s is registered twice", key)
	}
	r.actions[key] = action{phase: phase, handler: h}
	return nil
}

// StateKey declares a state key; persistent keys are checkpointed with the
// run and shown in GET /v1/runs/{id}.
func (r *Registrar) StateKey(name string, persistent bool) { r.persistent[name] = persistent }
