package pipelinetest

import (
	"strconv"
	"strings"

	"github.com/stepwise-run/stepwise/topics"
)

// scenarioConfig has leases of 10s (the driver moves its clock past them
// when nothing is in flight), a retry budget no crash series exhausts, and
// a dispatch timeout longer than any drive, so a message lost for good is
// a stuck run, not a late one.
const scenarioConfig = `
stepworker: {lease: 10s, max_attempts: 50, decision_hold: 1h, dispatch_timeout: 1h}
toolworker: {lease: 10s}
agents:
  parallel:
    model: {provider: script, turns: [{text: "hi"}]}
    tools: [echo, sleep, refund, external]
  sequential:
    model: {provider: script, turns: [{text: "hi"}]}
    tools: [echo, sleep]
    tool_execution: sequential
  hooked:
    model: {provider: script, turns: [{text: "hi"}]}
    tools: [echo, refund]
    plugins: {probe: {}}
  timed:
    model: {provider: script, turns: [{text: "hi"}]}
    tools: [echo, approve_or_go]
  parent:
    model: {provider: script, turns: [{text: "hi"}]}
    tools: [echo, ask_helper]
  regating:
    model: {provider: script, turns: [{text: "hi"}]}
    tools: [note, echo]
    tool_execution: sequential
    plugins: {probe: {}}
  helper:
    model: {provider: script, turns: [{text: "looking", tool_calls: [{name: echo, arguments: {x: 1}}]}, {text: "the helper's answer"}]}
    tools: [echo]
  compacting:
    model: {provider: script, turns: [{text: "hi"}]}
    tools: [echo]
    plugins:
      compaction: {budget_tokens: 500, keep_last: 2, model: {provider: script, loop_last: true, turns: [{text: "the numbers so far"}]}}
tools:
  refund: {executor: {builtin: echo}, permission: ask, resume_mode: pass_decision_to_tool}
  external: {executor: {builtin: pending}, resume_mode: pass_decision_to_tool}
  approve_or_go: {executor: {builtin: echo}, permission: ask, approval_timeout: 30s, on_timeout: resume}
  ask_helper: {executor: {agent: helper, input: "about {{.topic}}"}}
  note: {executor: {plugin: probe}}
`

// handoffConfig is scenarioConfig with two more agents: triage, which may
// hand a run to refunds, and refunds, which alone offers sleep and runs its
// calls one after the other.
var handoffConfig = strings.Replace(scenarioConfig, "\nagents:\n", `
agents:
  triage:
    model: {provider: script, turns: [{text: "hi"}]}
    tools: [echo]
    handoffs: [refunds]
  refunds:
    model: {provider: script, turns: [{text: "hi"}]}
    tools: [sleep]
    tool_execution: sequential
`, 1)

// budgetConfig is scenarioConfig with a token budget for the runs' tenant
// (the keyless gateway's): every step reserves from it and settles.
const budgetConfig = scenarioConfig + `
budgets:
  reserve_tokens: 500
  tenants:
    default: {tokens: 1000000}
`

// Scenarios are the runs the recovery tests drive: parallel and sequential
// calls over several steps, a call parked at ToolGate and decided while the
// run waits or before it parks (the decision is held), a call a tool parks
// itself, steps that reserve and settle a budget, a run cancelled while it
// waits, a decision still held when the run ends (rejected then, before
// the RunEnd hook and the result), a parked call resumed by its
// on_timeout, a call answered by the child run it starts (Child), a run
// handed from one agent to another (Handoff), and a sequential call judged
// again after a plugin tool's state command (Regate).
func Scenarios() []Scenario {
	resume := func(call string, payload string) *topics.Decision {
		return &topics.Decision{DecisionID: "d-" + call, CallID: call, Action: topics.ActionResume,
			Payload: []byte(payload), DecidedBy: "ops", Reason: "fine"}
	}
	return []Scenario{
		{Name: "parallel", Config: scenarioConfig, Agent: "parallel", Script: `{"provider":"script","turns":[
			{"text":"two at once","tool_calls":[{"name":"echo","arguments":{"x":1}},{"name":"sleep","arguments":{"ms":1}}]},
			{"text":"one more","tool_calls":[{"name":"echo","arguments":{"x":2}}]},
			{"text":"done"}]}`},
		{Name: "sequential", Config: scenarioConfig, Agent: "sequential", Script: `{"provider":"script","turns":[
			{"text":"one after the other","tool_calls":[{"name":"echo","arguments":{"x":1}},{"name":"echo","arguments":{"x":2}}]},
			{"text":"done"}]}`},
		{Name: "approval_while_waiting", Config: scenarioConfig, Agent: "parallel", Script: `{"provider":"script","turns":[
			{"text":"refund it","tool_calls":[{"name":"refund","arguments":{"amount":500}},{"name":"echo","arguments":{"x":1}}]},
			{"text":"done"}]}`, Decision: resume("call_0_0", `{"amount":50}`)},
		{Name: "approval_held_until_parked", Config: scenarioConfig, Agent: "parallel", Script: `{"provider":"script","turns":[
			{"text":"refund it","tool_calls":[{"name":"refund","arguments":{"amount":500}}]},
			{"text":"done"}]}`, Decision: resume("call_0_0", `{"amount":50}`), Early: true},
		{Name: "tool_parks_itself", Config: scenarioConfig, Agent: "parallel", Script: `{"provider":"script","turns":[
			{"text":"ask outside","tool_calls":[{"name":"external","arguments":{"job":7}}]},
			{"text":"done"}]}`, Decision: resume("call_0_0", `{"result":{"answer":42}}`)},
		Budget(),
		{Name: "cancelled_while_waiting", Config: scenarioConfig, Agent: "parallel", Script: `{"provider":"script","turns":[
			{"text":"refund it","tool_calls":[{"name":"refund","arguments":{"amount":500}},{"name":"echo","arguments":{"x":1}}]},
			{"text":"never reached"}]}`, Decision: &topics.Decision{DecisionID: "d-cancel", Action: topics.ActionCancelRun,
			DecidedBy: "ops", Reason: "changed my mind"}},
		HeldAtRunEnd(),
		{Name: "on_timeout", Config: scenarioConfig, Agent: "timed", Script: `{"provider":"script","turns":[
			{"text":"approve or go","tool_calls":[{"name":"approve_or_go","arguments":{"x":1}}]},
			{"text":"done"}]}`},
		Child(),
		Handoff(),
		Regate(),
	}
}

// Child is the scenario whose call of an agent tool starts a child run,
// which makes a call of its own and answers: the child's end tells the
// parent, whose call it resumes with the answer.
func Child() Scenario {
	return Scenario{Name: "child_run", Config: scenarioConfig, Agent: "parent", Script: `{"provider":"script","turns":[
		{"text":"ask","tool_calls":[{"name":"ask_helper","arguments":{"topic":"x"}}]},
		{"text":"done"}]}`}
}

// Handoff is the scenario whose first step hands the run from triage to
// refunds, whose tool its next step calls: the run is handed off once
// (run.handoff is a commit's event), whatever was redone. The handing
// step's other calls run as refunds runs calls, one after the other.
func Handoff() Scenario {
	return Scenario{Name: "handoff", Config: handoffConfig, Agent: "triage", Script: `{"provider":"script","turns":[
		{"text":"over to refunds","tool_calls":[{"name":"transfer_to_refunds","arguments":{}},{"name":"echo","arguments":{"x":1}},{"name":"echo","arguments":{"x":2}}]},
		{"text":"refunding","tool_calls":[{"name":"sleep","arguments":{"ms":1}}]},
		{"text":"done"}]}`}
}

// Compaction is the scenario whose prompt grows past its agent's
// compaction budget: its later steps are sent with a summary of the
// earlier ones, each compaction kept (context.compacted) once whatever is
// redone.
func Compaction() Scenario {
	turn := func(n int) string {
		return `{"text":"adding","tool_calls":[{"name":"echo","arguments":{"n":` + strconv.Itoa(n) + `,"note":"` + strings.Repeat("x", 150) + `"}}]}`
	}
	turns := make([]string, 8)
	for i := range turns {
		turns[i] = turn(i)
	}
	return Scenario{Name: "compaction", Config: scenarioConfig, Agent: "compacting",
		Script: `{"provider":"script","turns":[` + strings.Join(turns, ",") + `,{"text":"the total is 28"}]}`}
}

// Budget is the scenario whose steps reserve from their tenant's budget and
// settle it: no hold may be left once the run is published.
func Budget() Scenario {
	return Scenario{Name: "budget", Config: budgetConfig, Agent: "parallel", Script: `{"provider":"script","turns":[
		{"text":"two at once","usage":{"input_tokens":100,"output_tokens":20},"tool_calls":[{"name":"echo","arguments":{"x":1}},{"name":"echo","arguments":{"x":2}}]},
		{"text":"done","usage":{"input_tokens":150,"output_tokens":10}}]}`}
}

// Regate is the scenario whose sequential step runs a plugin tool whose
// state command makes ToolGate, judging the next call again, answer it:
// echo's result is {"noted":true}, never its arguments.
func Regate() Scenario {
	return Scenario{Name: "regate", Config: scenarioConfig, Agent: "regating", Script: `{"provider":"script","turns":[
		{"text":"note, then echo","tool_calls":[{"name":"note","arguments":{}},{"name":"echo","arguments":{"x":1}}]},
		{"text":"done"}]}`}
}

// HeldAtRunEnd is the scenario whose decision, sent before the first step,
// is for a call that never parks: held until the run ends, then rejected,
// its outcome published and the RunEnd hook run before the result.
func HeldAtRunEnd() Scenario {
	return Scenario{Name: "held_at_run_end", Config: scenarioConfig, Agent: "hooked", Script: `{"provider":"script","turns":[
		{"text":"echo it","tool_calls":[{"name":"echo","arguments":{"x":1}}]},
		{"text":"done"}]}`, Early: true, Decision: &topics.Decision{DecisionID: "d-call_0_0", CallID: "call_0_0",
		Action: topics.ActionResume, Payload: []byte(`{"x":2}`), DecidedBy: "ops", Reason: "fine"}}
}
