package pipelinetest

import "github.com/stepwise-run/stepwise/topics"

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
tools:
  refund: {executor: {builtin: echo}, permission: ask, resume_mode: pass_decision_to_tool}
  external: {executor: {builtin: pending}, resume_mode: pass_decision_to_tool}
`

// Scenarios are the runs the recovery tests drive: parallel and sequential
// calls over several steps, a call parked at ToolGate and decided while the
// run waits or before it parks (the decision is held), and a call a tool
// parks itself.
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
	}
}
