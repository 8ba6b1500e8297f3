package versions

import (
	"fmt"
	"sort"
	"sync/atomic"

	"github.com/stepwise-run/stepwise/pipeline/config"
	"github.com/stepwise-run/stepwise/pipeline/policy"
	"github.com/stepwise-run/stepwise/pipeline/stop"
)

// Version is one version of an agent: its hash, its definition, and what a
// step worker compiles of it once (the stop conditions, the tools'
// ask_when). A Version does not change; it may be read from any number of
// goroutines.
type Version struct {
	Hash string
	Definition
	stops *stop.Conditions
	asks  map[string]*policy.Condition // by tool, for the tools with an ask_when
	raw   []byte                       // the definition as stored
	// written: this process has made sure the store has the definition
	// (Catalog.Pin); a version read from the store has it.
	written atomic.Bool
}

// compile makes the version whose definition is d, encoded as raw.
func compile(d Definition, raw []byte) (*Version, error) {
	v := &Version{Hash: hashOf(raw), Definition: d, raw: raw}
	var err error
	if v.stops, err = stop.Compile(d.Agent.Stop); err != nil {
		return nil, fmt.Errorf("agent version %s: stop: %w", v.Hash, err)
	}
	names := make([]string, 0, len(d.Tools))
	for name := range d.Tools {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		expr := d.Tools[name].AskWhen
		if expr == "" {
			continue
		}
		c, err := policy.Compile(expr)
		if err != nil {
			return nil, fmt.Errorf("agent version %s: tools.%s.ask_when: %w", v.Hash, name, err)
		}
		if v.asks == nil {
			v.asks = map[string]*policy.Condition{}
		}
		v.asks[name] = c
	}
	return v, nil
}

// Tool returns the definition of the tool named name as this version
// pinned it; false for a tool the agent does not offer.
func (v *Version) Tool(name string) (config.Tool, bool) {
	t, ok := v.Tools[name]
	return t, ok
}

// Stops returns the agent's stop conditions, compiled.
func (v *Version) Stops() *stop.Conditions { return v.stops }

// AskWhen returns the compiled ask_when of the tool named name; false when
// the tool has none.
func (v *Version) AskWhen(name string) (*policy.Condition, bool) {
	c, ok := v.asks[name]
	return c, ok
}
