package versions

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/stepwise-run/stepwise/pipeline/config"
)

// hashLen is how many hex digits of the SHA-256 of a definition name its
// version: 64 bits, no collision among the versions one deployment sees.
const hashLen = 16

// Definition is what a version pins: an agent's definition, those of the
// tools it offers the model, and the description each of its handoffs is
// offered with (its target's).
type Definition struct {
	Agent    config.Agent           `json:"agent"`
	Tools    map[string]config.Tool `json:"tools,omitempty"`
	Handoffs map[string]string      `json:"handoffs,omitempty"`
}

// definitionOf is the definition of the agent named name in cfg; false
// when cfg has no such agent.
func definitionOf(cfg *config.Config, name string) (Definition, bool) {
	a, ok := cfg.Agent(name)
	if !ok {
		return Definition{}, false
	}
	d := Definition{Agent: a}
	for _, t := range a.Tools {
		if tool, ok := cfg.Tool(t); ok {
			if d.Tools == nil {
				d.Tools = make(map[string]config.Tool, len(a.Tools))
			}
			d.Tools[t] = tool
		}
	}
	for _, to := range a.Handoffs {
		target, _ := cfg.Agent(to)
		if d.Handoffs == nil {
			d.Handoffs = make(map[string]string, len(a.Handoffs))
		}
		d.Handoffs[to] = config.HandoffDescription(to, target)
	}
	return d, true
}

// encode is the definition as it is stored and hashed: JSON, map keys
// sorted, so one definition always encodes alike.
func (d Definition) encode() ([]byte, error) {
	b, err := json.Marshal(d)
	if err != nil {
		return nil, fmt.Errorf("encode the definition of an agent version: %w", err)
	}
	return b, nil
}

// hashOf names the version whose definition encodes as b.
func hashOf(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:hashLen]
}

// decode reads a stored definition.
func decode(raw []byte, d *Definition) error {
	if err := json.Unmarshal(raw, d); err != nil {
		return fmt.Errorf("decode the definition: %w", err)
	}
	return nil
}
