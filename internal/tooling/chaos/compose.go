package chaos

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
)

// The agents and tools of the composing scenario: a composed run calls
// childTool, whose executor is the agent childAgent (each call a child
// run), and hands itself to handoffAgent, which has the same tools and
// heldTool, which only it offers: a step run by the wrong holder fails
// that call.
const (
	handoffAgent = "chaos_b"
	childAgent   = "chaos_child"
	childTool    = "delegate"
	heldTool     = "recap"
	handoffTool  = "transfer_to_" + handoffAgent // config.HandoffTool(handoffAgent)
)

// forkSuffix ends the id of the fork of a run: <run>.fork.
const forkSuffix = ".fork"

// composeStream seeds a composed variant's own random stream, so that the
// parts every variant shares stay as they were.
const composeStream = 0xc0_0000_0000

// childScript is the configured model of childAgent: one step of an echo
// and a sleep, then its answer, which becomes its parent's call result.
var childScript = scriptModel{Provider: "script", Turns: []turn{
	{Text: "Reading the document.", DelayMS: 60, ToolCalls: []toolCall{
		{Name: "echo", Arguments: map[string]any{"child": true}},
		{Name: "sleep", Arguments: map[string]any{"ms": 25}},
	}},
	{Text: "The summary.", DelayMS: 10},
}}

// composedVariant reports whether the runs of variant v compose: about a
// fifth of the variants.
func composedVariant(v int) bool { return v%5 == 4 }

// forkStep returns the step the runs of variant v are forked from once
// they are done, and false for a variant whose runs are not forked (an
// eighth of the variants, one of them composed).
func forkStep(v, steps int) (int, bool) {
	if v%8 != 1 {
		return 0, false
	}
	return (v / 8) % steps, true
}

// composeScript makes s, the script of variant v, compose: its first turn
// also calls childTool once to three times in parallel, its second (or
// only) tool-calling turn hands the run to handoffAgent, and its last
// tool-calling turn, when that is a later one, starts one more child and
// calls heldTool under the new holder.
func composeScript(s *scriptModel, seed uint64, v int) {
	rng := rand.New(rand.NewPCG(seed, uint64(v)|composeStream))
	delegate := func(t *turn, doc string) {
		t.ToolCalls = append(t.ToolCalls, toolCall{Name: childTool, Arguments: map[string]any{"document": doc}})
	}
	for k := range 1 + rng.IntN(3) {
		delegate(&s.Turns[0], fmt.Sprintf("v%d-doc-%d", v, k))
	}
	last := len(s.Turns) - 2
	handing := min(1, last)
	s.Turns[handing].ToolCalls = append(s.Turns[handing].ToolCalls, toolCall{Name: handoffTool, Arguments: map[string]any{}})
	if last > handing {
		delegate(&s.Turns[last], fmt.Sprintf("v%d-doc-late", v))
		s.Turns[last].ToolCalls = append(s.Turns[last].ToolCalls, toolCall{Name: heldTool, Arguments: map[string]any{"variant": v}})
	}
}

// composeYAML is the part of the programs' configuration the composing
// scenario adds: the agent a run is handed to, the child agent and its
// tool.
func composeYAML() string {
	child, _ := json.Marshal(childScript) // plain values: cannot fail
	return `
  ` + handoffAgent + `:
    description: Goes on with a chaos run handed to it.
    model: {provider: script, turns: [{text: "This run brought no script."}]}
    tools: [echo, sleep, ` + childTool + `, ` + heldTool + `]
  ` + childAgent + `:
    model: ` + string(child) + `
    tools: [echo, sleep]
tools:
  ` + childTool + `:
    parameters: {type: object, properties: {document: {type: string}}, required: [document]}
    executor: {agent: ` + childAgent + `, input: "Summarise {{.document}}."}
  ` + heldTool + `: {executor: {builtin: echo}}
`
}

// member is one run the oracle judges and where its reference is. A run
// submitted, its fork and every child of either form a family named by
// root, the submitted run's id, which every member's id extends
// (<root>.fork, <root>.call_0_1, <root>.fork.call_2_0); the reference of
// a member is the member of the reference family (refRoot) with the same
// extension, and both histories are normalized with their family's root.
type member struct {
	id, root, refRoot string
	kind              string // memberRun, memberChild, memberFork, memberTick or memberBatch
}

// The kinds of member.
const (
	memberRun   = "run"
	memberChild = "child"
	memberFork  = "fork"
	memberTick  = "tick"
	memberBatch = "batch" // a run submitted in batch mode (Config.BatchShare)
)

// refID is the id of m's reference run.
func (m member) refID() string { return m.refRoot + strings.TrimPrefix(m.id, m.root) }

// child is the member that is the child run childID of m.
func (m member) child(childID string) member {
	return member{id: childID, root: m.root, refRoot: m.refRoot, kind: memberChild}
}

// childProblems checks a done parent's agent-tool calls against its
// children: each call has exactly one child, named <parent>.<call>, and
// the call's result is that child's answer (answers: child id → the text
// of its last assistant message, absent when the child is not done).
// It returns what is wrong and how many calls started more than one
// child.
func childProblems(v runView, answers map[string]string) (wrong []string, doubleStarted int) {
	byCall := map[string][]string{}
	for _, c := range v.Children {
		byCall[c.CallID] = append(byCall[c.CallID], c.RunID)
	}
	for _, c := range v.ToolCalls {
		if c.Tool != childTool {
			continue
		}
		kids := byCall[c.CallID]
		delete(byCall, c.CallID)
		switch {
		case len(kids) == 0:
			wrong = append(wrong, fmt.Sprintf("child of %s: none listed", c.CallID))
			continue
		case len(kids) > 1:
			doubleStarted++
			wrong = append(wrong, fmt.Sprintf("child of %s: %d listed (%s)", c.CallID, len(kids), strings.Join(kids, ", ")))
			continue
		}
		if want := v.RunID + "." + c.CallID; kids[0] != want {
			wrong = append(wrong, fmt.Sprintf("child of %s: %s, want %s", c.CallID, kids[0], want))
			continue
		}
		answer, ok := answers[kids[0]]
		if !ok {
			wrong = append(wrong, fmt.Sprintf("child of %s: %s did not end", c.CallID, kids[0]))
			continue
		}
		var result string
		if err := json.Unmarshal(c.Result, &result); err != nil || result != answer {
			wrong = append(wrong, fmt.Sprintf("child of %s: the call's result %s, the child answered %q", c.CallID, clip(c.Result, 100), answer))
		}
	}
	var extra []string
	for call := range byCall {
		extra = append(extra, call)
	}
	sort.Strings(extra)
	for _, call := range extra {
		wrong = append(wrong, fmt.Sprintf("child of %s: listed, but that call is not an agent tool's", call))
	}
	return wrong, doubleStarted
}

// forkPrefix is how many messages of a run of script s a fork from step
// keeps: the input, and each step's assistant message and call results up
// to and including step.
func forkPrefix(s scriptModel, step int) int {
	n := 1
	for _, t := range s.Turns[:min(step+1, len(s.Turns))] {
		n += 1 + len(t.ToolCalls)
	}
	return n
}

// forkProblem says how a fork's history up to its fork point differs from
// its original's (both normalized with the original's id), "" when they
// are the same: the first n messages.
func forkProblem(fork, orig normalized, n int) string {
	if len(fork.messages) < n || len(orig.messages) < n {
		return fmt.Sprintf("fork: %d messages, its original %d; want both ≥ %d", len(fork.messages), len(orig.messages), n)
	}
	if d := firstDiff("forked message", fork.messages[:n], orig.messages[:n]); d != "" {
		return "fork: " + d
	}
	return ""
}

// lastAnswer is the content of the last assistant message of a normalized
// history, and false when it has none.
func lastAnswer(h normalized) (string, bool) {
	for i := len(h.messages) - 1; i >= 0; i-- {
		var m struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		}
		if json.Unmarshal(h.messages[i], &m) == nil && m.Role == "assistant" {
			return m.Content, true
		}
	}
	return "", false
}
