package app_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stepwise-run/stepwise/internal/tooling/testinfra"
	"github.com/stepwise-run/stepwise/pipeline"
)

const checkedConfig = approvalsConfig + `  capped_refund:
    executor: {builtin: echo}
    permission: ask
    resume_mode: pass_decision_to_tool
    parameters: {type: object, properties: {amount: {type: number, maximum: 100}}, required: [amount], additionalProperties: false}
`

// A pass_decision_to_tool payload the tool's JSON Schema refuses is
// rejected with the reason and the tool never runs; a fitting one runs.
func TestDecisionChecks_a_payload_that_does_not_fit_the_tool_is_rejected_and_nothing_runs(t *testing.T) {
	cfg := strings.Replace(checkedConfig, "tools: [tool_a,", "tools: [capped_refund, tool_a,", 1)
	stack := connect(t, newInfra(t), parseConfig(t, cfg))
	workers(t, stack)
	base := serve(t, stack)
	id := createRun(t, base, "r-capped", "approvals", script(call("R", "capped_refund", `{"amount":40}`)))
	waitFor(t, base, id, "waiting", func(v runView) bool { return v.Status == pipeline.RunWaiting })

	decide(t, base, id, map[string]any{"decision_id": "bad", "call_id": "R", "action": "resume",
		"payload": map[string]any{"amount": "a million", "extra": true}})
	var rejected []pipeline.Event
	testinfra.Eventually(t, 20*time.Second, func() bool {
		rejected = eventsOf(runEvents(t, stack, id), pipeline.EventDecisionRejected)
		return len(rejected) == 1
	}, func() string { return "no decision.rejected" })
	var data struct{ DecisionID, Reason string }
	_ = json.Unmarshal(rejected[0].Data, &data)
	if !strings.Contains(data.Reason, "does not fit the parameters of capped_refund") {
		t.Fatalf("rejected with %q", data.Reason)
	}
	time.Sleep(300 * time.Millisecond)
	if v := getRun(t, base, id); v.Status != pipeline.RunWaiting || callOf(v, "R").Status != pipeline.CallSuspended {
		t.Fatalf("after the rejection the run is %s and its call %s", v.Status, callOf(v, "R").Status)
	}
	if started := eventsOf(runEvents(t, stack, id), pipeline.EventToolCallStarted); len(started) != 0 {
		t.Fatalf("the tool ran: %v", started)
	}

	decide(t, base, id, map[string]any{"decision_id": "good", "call_id": "R", "action": "resume", "payload": map[string]any{"amount": 50}})
	v := waitDone(t, base, id, 30*time.Second)
	assertNaturalEnd(t, v, 1)
	if c := callOf(v, "R"); c.Status != pipeline.CallSucceeded || canonical(t, c.Result) != canonical(t, map[string]any{"amount": 50}) {
		t.Fatalf("call R: %+v", c)
	}
}

// A resumed call passes ToolGate again: with runs.upgrade_waiting, a run
// moves to its agent's new version when a decision wakes it, so a tool the
// policy denies since it parked is blocked without running, and the run
// ends blocked, as a block at commit ends it.
func TestDecisionChecks_a_resumed_call_whose_tool_is_now_denied_is_blocked_when_waiting_runs_upgrade(t *testing.T) {
	in := newInfra(t)
	before := connect(t, in, parseConfig(t, approvalsConfig))
	stopStep := start(t, before.RunStepWorker)
	start(t, func(ctx context.Context) error { return before.RunToolWorker(ctx, nil) })
	base := serve(t, before)
	id := createRun(t, base, "r-denied", "approvals", script(call("A", "tool_a", `{"x":1}`)))
	parkedOn := waitFor(t, base, id, "waiting", func(v runView) bool { return v.Status == pipeline.RunWaiting }).AgentVersion

	// The policy changes while the call waits: tool_a is denied now, and
	// waiting runs move to the new version.
	stopStep()
	denied := strings.Replace(approvalsConfig, "tool_a: {executor: {builtin: echo}, permission: ask}", "tool_a: {executor: {builtin: echo}, permission: deny}", 1) +
		"runs: {upgrade_waiting: true}\n"
	after := connect(t, in, parseConfig(t, denied))
	start(t, after.RunStepWorker)

	decide(t, base, id, map[string]any{"decision_id": "d-a", "call_id": "A", "action": "resume"})
	v := waitDone(t, base, id, 30*time.Second)
	// As a block at commit does: the call fails and the run ends blocked.
	if v.Termination.Reason != pipeline.ReasonBlocked || !strings.Contains(v.Termination.Detail, "denied by policy") {
		t.Fatalf("run ended %+v, want blocked", v.Termination)
	}
	c := callOf(v, "A")
	if c.Status != pipeline.CallFailed || !strings.Contains(c.Error, "denied by policy") {
		t.Fatalf("call A: %+v", c)
	}
	for _, e := range eventsOf(runEvents(t, after, id), pipeline.EventToolCallStarted) {
		t.Fatalf("the denied tool ran: %+v", e)
	}
	if v.AgentVersion == "" || v.AgentVersion == parkedOn {
		t.Fatalf("the run is on version %q; want the new one, not %q", v.AgentVersion, parkedOn)
	}
}

// use_decision_as_result goes suspended → resuming → succeeded, as the
// seeds' table says, and runs nothing.
func TestDecisionChecks_use_decision_as_result_goes_through_resuming(t *testing.T) {
	stack, base := approvalStack(t)
	id := createRun(t, base, "r-asresult", "approvals", script(call("R", "result_from_decision", `{"q":1}`)))
	waitFor(t, base, id, "waiting", func(v runView) bool { return v.Status == pipeline.RunWaiting })
	decide(t, base, id, map[string]any{"decision_id": "d-r", "call_id": "R", "action": "resume", "payload": map[string]any{"ok": true}})
	waitDone(t, base, id, 30*time.Second)
	var statuses []string
	for _, e := range runEvents(t, stack, id) {
		if e.CallID != "R" {
			continue
		}
		var d struct{ Status string }
		_ = json.Unmarshal(e.Data, &d)
		if d.Status != "" {
			statuses = append(statuses, string(e.Type)+":"+d.Status)
		}
	}
	want := "decision.applied:resuming,tool_call.finished:succeeded"
	if got := strings.Join(statuses, ","); !strings.HasSuffix(got, want) {
		t.Fatalf("statuses of R: %s, want them to end %s", got, want)
	}
}
