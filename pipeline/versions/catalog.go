package versions

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/stepwise-run/stepwise/pipeline/config"
	"github.com/stepwise-run/stepwise/pipeline/store"
)

// Store keeps the definitions of versions by hash; *store.Store is one.
type Store interface {
	PutAgentVersion(ctx context.Context, hash string, definition []byte) error
	AgentVersion(ctx context.Context, hash string) ([]byte, error)
}

var _ Store = (*store.Store)(nil)

// Catalog holds a process's current versions, one per agent of its
// configuration, and every version it has read since. Safe for concurrent
// use. It keeps every version it has seen: there are as many as there were
// configurations in use, a handful.
type Catalog struct {
	store   Store
	current map[string]*Version // by agent name

	mu    sync.RWMutex
	known map[string]*Version // by hash
}

// New hashes the version of each agent of cfg. It writes nothing: Pin
// does.
func New(cfg *config.Config, st Store) (*Catalog, error) {
	c := &Catalog{store: st, current: make(map[string]*Version, len(cfg.Agents)), known: make(map[string]*Version, len(cfg.Agents))}
	for name := range cfg.Agents {
		d, _ := definitionOf(cfg, name)
		raw, err := d.encode()
		if err != nil {
			return nil, fmt.Errorf("agent %s: %w", name, err)
		}
		v, err := compile(d, raw)
		if err != nil {
			return nil, fmt.Errorf("agent %s: %w", name, err)
		}
		c.current[name], c.known[v.Hash] = v, v
	}
	return c, nil
}

// Pin returns the hash of the current version of the agent named agent,
// for a run about to be created with it (or handed to it), after making
// sure the store has its definition: the first Pin of a version in this
// process writes it (PutAgentVersion, a no-op where it is there), later
// ones only look it up. A failed write is an error, and the next Pin
// tries again: a run is never pinned to a version Redis may not have. ""
// for an agent the configuration does not have: its run fails at its
// first step, as an unknown agent's does.
func (c *Catalog) Pin(ctx context.Context, agent string) (string, error) {
	v, ok := c.current[agent]
	if !ok {
		return "", nil
	}
	if !v.written.Load() {
		if err := c.store.PutAgentVersion(ctx, v.Hash, v.raw); err != nil {
			return "", fmt.Errorf("write version %s of agent %s: %w", v.Hash, agent, err)
		}
		v.written.Store(true)
	}
	return v.Hash, nil
}

// Agents returns the names of the agents of the configuration, sorted.
func (c *Catalog) Agents() []string {
	names := make([]string, 0, len(c.current))
	for name := range c.current {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// Current returns the version of the agent named agent in this process's
// configuration; false when it has no such agent.
func (c *Catalog) Current(agent string) (*Version, bool) {
	v, ok := c.current[agent]
	return v, ok
}

// Get returns the version named hash: from memory when this process knows
// it, else read from the store once and kept. A version the store does not
// have is ErrLost; one whose definition does not hash to its name, or no
// longer decodes, is an error too.
func (c *Catalog) Get(ctx context.Context, hash string) (*Version, error) {
	c.mu.RLock()
	v, ok := c.known[hash]
	c.mu.RUnlock()
	if ok {
		return v, nil
	}
	raw, err := c.store.AgentVersion(ctx, hash)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("%w: %s is not in Redis; its runs cannot go on as they started", ErrLost, hash)
	}
	if err != nil {
		return nil, err
	}
	if got := hashOf(raw); got != hash {
		return nil, fmt.Errorf("agent version %s: its stored definition hashes to %s", hash, got)
	}
	var d Definition
	if err := decode(raw, &d); err != nil {
		return nil, fmt.Errorf("agent version %s: %w", hash, err)
	}
	if v, err = compile(d, raw); err != nil {
		return nil, err
	}
	v.written.Store(true)
	c.mu.Lock()
	c.known[hash] = v
	c.mu.Unlock()
	return v, nil
}
