// Package audit is an example of a custom stepwise plugin. It counts an
// agent's tool calls per tool, in a persistent state key shown in
// GET /v1/runs/{id}, and blocks the tools its settings name:
//
//	agents:
//	  support:
//	    plugins:
//	      audit: {block: [delete_account], reason: "accounts are closed by a person"}
//
// Both hooks run in the step worker (ToolGate and StepEnd), so only the
// step worker needs a build that has the plugin — but every worker builds
// the plugins of every agent, so the tool worker must know its name too
// (see ../README.md).
package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/plugin"
)

// Name is the plugin's name under agents.<name>.plugins.
const Name = "audit"

// CallsKey counts the run's tool calls by tool. It is persistent: the step
// worker commits it with the step, so a StepEnd delivered twice counts once.
var CallsKey = plugin.Key[map[string]int]{Name: "audit.calls", Persistent: true}

// Settings are the plugin's settings; all optional.
type Settings struct {
	// Block names tools whose calls are blocked at ToolGate. A block fails
	// the call and ends the run with termination reason "blocked".
	Block []string `json:"block,omitempty"`
	// Reason is told to people and to the model; default "tool <t> is
	// blocked by the audit plugin".
	Reason string `json:"reason,omitempty"`
}

// Validate reports every problem of the settings at once.
func (s Settings) Validate() error {
	var errs []error
	for i, t := range s.Block {
		if t == "" {
			errs = append(errs, fmt.Errorf("block[%d]: empty tool name", i))
		} else if j := slices.Index(s.Block, t); j < i {
			errs = append(errs, fmt.Errorf("block[%d]: %q is already listed at [%d]", i, t, j))
		}
	}
	return errors.Join(errs...)
}

// Plugin is the audit plugin.
type Plugin struct{ s Settings }

// New is the plugin's factory: it reads the settings an agent gives it
// (null when it gives none), strictly, so a misspelt field is an error.
func New(settings json.RawMessage) (plugin.Plugin, error) {
	var s Settings
	if raw := bytes.TrimSpace(settings); len(raw) > 0 && !bytes.Equal(raw, []byte("null")) {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&s); err != nil {
			return nil, fmt.Errorf("settings: %w", err)
		}
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return &Plugin{s: s}, nil
}

// Register declares the state key and the two hooks.
func (p *Plugin) Register(r *plugin.Registrar) error {
	r.StateKey(CallsKey.Name, CallsKey.Persistent)
	r.Hook(pipeline.PhaseToolGate, p.gate)
	r.Hook(pipeline.PhaseStepEnd, p.count)
	return nil
}

// gate blocks a call of a blocked tool. It decides from the call alone, so
// a replayed step decides the same.
func (p *Plugin) gate(_ context.Context, pc *plugin.Context) (plugin.Command, error) {
	var cmd plugin.Command
	if pc.Call == nil || !slices.Contains(p.s.Block, pc.Call.Tool) {
		return cmd, nil
	}
	reason := p.s.Reason
	if reason == "" {
		reason = fmt.Sprintf("tool %q is blocked by the audit plugin", pc.Call.Tool)
	}
	err := cmd.Schedule(plugin.ToolIntercept, plugin.Intercept{
		Intercept: pipeline.Intercept{Action: pipeline.GateBlock, Reason: reason},
		CallID:    pc.Call.ID,
	})
	return cmd, err
}

// count adds the step's calls to CallsKey. It reads the count from the
// run's checkpointed state and returns the new count as an update, never
// writing anywhere itself: that is what makes it replay-safe.
func (p *Plugin) count(_ context.Context, pc *plugin.Context) (plugin.Command, error) {
	var cmd plugin.Command
	if len(pc.Calls) == 0 {
		return cmd, nil
	}
	counts, _, err := CallsKey.Get(pc.State)
	if err != nil {
		return cmd, err
	}
	if counts == nil {
		counts = map[string]int{}
	}
	for _, c := range pc.Calls {
		counts[c.Tool]++
	}
	return cmd, CallsKey.Set(&cmd, counts)
}
