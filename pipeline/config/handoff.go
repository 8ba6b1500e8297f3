package config

import (
	"fmt"
	"strings"
)

// What an agent a run is handed to sees of its conversation
// (Agent.HandoffHistory).
const (
	HandoffHistoryAll      = "all"       // the whole conversation (default)
	HandoffHistoryLastUser = "last_user" // the last user message before the handoff, and what follows the handoff
)

// DefaultMaxHandoffs is runs.max_handoffs when it is not set.
const DefaultMaxHandoffs = 10

// handoffToolPrefix begins the name of every handoff tool, as in the
// OpenAI Agents SDK.
const handoffToolPrefix = "transfer_to_"

// HandoffTool is the name of the tool that hands a run to the agent named
// agent: transfer_to_ and the name in lower case, each character other than
// a letter, a digit or _ made _, as the OpenAI Agents SDK names it.
func HandoffTool(agent string) string {
	return handoffToolPrefix + strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '_':
			return r
		case r >= 'A' && r <= 'Z':
			return r - 'A' + 'a'
		}
		return '_'
	}, agent)
}

// HandoffDescription is the description of the tool that hands a run to
// the agent named name, to, as the OpenAI Agents SDK words it: a fixed
// sentence followed by to's description.
func HandoffDescription(name string, to Agent) string {
	return strings.TrimSpace(fmt.Sprintf("Handoff to the %s agent to handle the request. %s", name, to.Description))
}

// HandoffTarget returns the agent a call of tool hands the run to when the
// agent offers that handoff.
func (a Agent) HandoffTarget(tool string) (string, bool) {
	if !strings.HasPrefix(tool, handoffToolPrefix) {
		return "", false
	}
	for _, to := range a.Handoffs {
		if HandoffTool(to) == tool {
			return to, true
		}
	}
	return "", false
}

// checkHandoffs reports a handoff to an agent that is not configured, to
// the agent itself, listed twice, or whose tool name another handoff or
// one of the agent's tools already has; and an unknown handoff_history.
func (a Agent) checkHandoffs(ps *problems, path, name string, agents map[string]Agent) {
	oneOf(ps, field(path, "handoff_history"), a.HandoffHistory, HandoffHistoryAll, HandoffHistoryLastUser)
	named := make(map[string]string, len(a.Handoffs)+len(a.Tools)) // tool name → what has it
	for _, t := range a.Tools {
		named[t] = fmt.Sprintf("tool %q", t)
	}
	for i, to := range a.Handoffs {
		p := fmt.Sprintf("%s[%d]", field(path, "handoffs"), i)
		tool := HandoffTool(to)
		switch _, ok := agents[to]; {
		case !ok:
			ps.add(p, fmt.Sprintf("unknown agent %q", to))
		case to == name:
			ps.add(p, "an agent cannot hand a run to itself")
		case named[tool] != "":
			ps.add(p, fmt.Sprintf("its tool %s is already the name of %s", tool, named[tool]))
		default:
			named[tool] = fmt.Sprintf("the handoff to %q", to)
		}
	}
}
