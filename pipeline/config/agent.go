package config

import (
	"encoding/json"
	"fmt"
	"regexp"
)

// Tool execution modes of an agent.
const (
	ToolExecutionParallel   = "parallel"   // every allowed call of a step is published at once (default)
	ToolExecutionSequential = "sequential" // the next call is published when the previous one finishes
)

// Agent is a named agent: the model it asks, its system prompt, the tools it
// may call and when its runs stop.
type Agent struct {
	Model  Model    `json:"model"`
	System string   `json:"system,omitempty"`
	Tools  []string `json:"tools,omitempty"` // names of tools in Config.Tools (built-ins included)

	// Description says what the agent is for; an agent that may hand a run
	// to this one offers the handoff with it (handoff.go). Optional.
	Description string `json:"description,omitempty"`
	// Handoffs names the agents this one may hand a run to, each offered
	// to the model as the tool transfer_to_<name> (HandoffTool). Optional.
	Handoffs []string `json:"handoffs,omitempty"`
	// HandoffHistory is what this agent sees of the conversation when a
	// run is handed to it: "all" (default) or "last_user".
	HandoffHistory string `json:"handoff_history,omitempty"`

	// ToolExecution is "parallel" (default) or "sequential".
	ToolExecution string `json:"tool_execution,omitempty"`
	Stop          Stop   `json:"stop,omitzero"`

	// Plugins holds per-plugin settings by plugin name, read by the plugins
	// themselves. Optional; nothing here checks them.
	Plugins map[string]json.RawMessage `json:"plugins,omitempty"`
}

// Sequential reports whether the agent's tool calls run one after another.
func (a Agent) Sequential() bool { return a.ToolExecution == ToolExecutionSequential }

// Stop holds an agent's stop conditions, evaluated at StepEnd. A zero field
// is a condition that never fires.
type Stop struct {
	MaxRounds         int      `json:"max_rounds,omitempty"`         // steps before code max_rounds
	Timeout           Duration `json:"timeout,omitzero"`             // wall time since the run started, code timeout
	TokenBudget       int64    `json:"token_budget,omitempty"`       // input+output tokens, code token_budget
	ConsecutiveErrors int      `json:"consecutive_errors,omitempty"` // steps in a row with at least one failed call
	StopOnTool        []string `json:"stop_on_tool,omitempty"`       // a call of one of these tools ends the run
	ContentMatch      string   `json:"content_match,omitempty"`      // a Go regexp matched against the assistant text
	LoopDetection     int      `json:"loop_detection,omitempty"`     // this many identical rounds in a row
}

func (a *Agent) setDefaults() {
	if a.ToolExecution == "" {
		a.ToolExecution = ToolExecutionParallel
	}
	if a.HandoffHistory == "" {
		a.HandoffHistory = HandoffHistoryAll
	}
}

func (a Agent) check(ps *problems, path, name string, cfg *Config) {
	tools := cfg.Tools
	a.Model.check(ps, field(path, "model"))
	switch a.ToolExecution {
	case ToolExecutionParallel, ToolExecutionSequential:
	default:
		ps.add(field(path, "tool_execution"), fmt.Sprintf("%q; want %s or %s", a.ToolExecution, ToolExecutionParallel, ToolExecutionSequential))
	}
	seen := make(map[string]int, len(a.Tools))
	for i, name := range a.Tools {
		p := fmt.Sprintf("%s[%d]", field(path, "tools"), i)
		if first, dup := seen[name]; dup {
			ps.add(p, fmt.Sprintf("tool %q is already listed at [%d]", name, first))
			continue
		}
		seen[name] = i
		t, ok := tools[name]
		if !ok {
			ps.add(p, fmt.Sprintf("unknown tool %q", name))
			continue
		}
		if by := t.Executor.Plugin; by != "" {
			if _, on := a.Plugins[by]; !on {
				ps.add(p, fmt.Sprintf("tool %q is executed by plugin %q, which this agent does not enable under plugins", name, by))
			}
		}
	}
	a.Stop.check(ps, field(path, "stop"))
	a.checkHandoffs(ps, path, name, cfg.Agents)
}

func (s Stop) check(ps *problems, path string) {
	nonNegative(ps, field(path, "max_rounds"), int64(s.MaxRounds))
	nonNegativeDuration(ps, field(path, "timeout"), s.Timeout)
	nonNegative(ps, field(path, "token_budget"), s.TokenBudget)
	nonNegative(ps, field(path, "consecutive_errors"), int64(s.ConsecutiveErrors))
	nonNegative(ps, field(path, "loop_detection"), int64(s.LoopDetection))
	for i, name := range s.StopOnTool {
		if name == "" {
			ps.add(fmt.Sprintf("%s[%d]", field(path, "stop_on_tool"), i), "empty tool name")
		}
	}
	if s.ContentMatch != "" {
		if _, err := regexp.Compile(s.ContentMatch); err != nil {
			ps.add(field(path, "content_match"), err.Error())
		}
	}
}

func nonNegative(ps *problems, path string, v int64) {
	if v < 0 {
		ps.add(path, fmt.Sprintf("%d is negative", v))
	}
}

func nonNegativeDuration(ps *problems, path string, d Duration) {
	if d.Duration < 0 {
		ps.add(path, fmt.Sprintf("%s is negative", d.Duration))
	}
}
