package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stepwise-run/stepwise/internal/app"
	"github.com/stepwise-run/stepwise/internal/tooling/testinfra"
	"github.com/stepwise-run/stepwise/pipeline"
)

// approvalsConfig: tools that need approval in every way the configuration
// allows, on one agent.
const approvalsConfig = `
kafka: {partitions: 4}
stepworker: {lease: 1s, sweep_interval: 100ms, dispatch_timeout: 3s, max_attempts: 3, decision_hold: 3s}
toolworker: {lease: 1s, default_timeout: 20s}
agents:
  approvals:
    model: {provider: script, turns: [{text: "hi"}]}
    tools: [tool_a, tool_b, tool_c, refund, result_from_decision, deny_me, timed, timed_resume, timed_again, external, ui, echo, sleep]
tools:
  tool_a: {executor: {builtin: echo}, permission: ask}
  tool_b: {executor: {builtin: echo}, permission: ask}
  tool_c: {executor: {builtin: sleep}}
  refund: {executor: {builtin: echo}, permission: ask, ask_when: "args.amount > 100", resume_mode: pass_decision_to_tool}
  result_from_decision: {executor: {builtin: echo}, permission: ask, resume_mode: use_decision_as_result}
  deny_me: {executor: {builtin: echo}, permission: deny}
  timed: {executor: {builtin: echo}, permission: ask, approval_timeout: 1s, on_timeout: cancel}
  timed_resume: {executor: {builtin: echo}, permission: ask, approval_timeout: 1s, on_timeout: resume}
  timed_again: {executor: {builtin: pending}, permission: ask, approval_timeout: 1s, on_timeout: resume}
  external: {executor: {builtin: pending}, resume_mode: pass_decision_to_tool}
  ui: {executor: {frontend: {}}, parameters: {type: object}}
`

// approvalStack runs a full stack on the approvals configuration.
func approvalStack(t *testing.T) (*app.Stack, string) {
	t.Helper()
	stack := connect(t, newInfra(t), parseConfig(t, approvalsConfig))
	workers(t, stack)
	return stack, serve(t, stack)
}

// script builds a script model whose first turn proposes calls and whose
// second answers.
func script(calls ...string) string {
	return `{"provider":"script","turns":[{"text":"working","tool_calls":[` + strings.Join(calls, ",") + `]},{"text":"done"}]}`
}

func call(id, name, args string) string {
	return fmt.Sprintf(`{"id":%q,"name":%q,"arguments":%s}`, id, name, args)
}

func decide(t *testing.T, base, runID string, body map[string]any) {
	t.Helper()
	if code := httpDo(t, http.MethodPost, base+"/v1/runs/"+runID+"/decisions", body, nil); code != http.StatusAccepted {
		t.Fatalf("decision %v: status %d", body, code)
	}
}

func callOf(v runView, id string) callView {
	for _, c := range v.ToolCalls {
		if c.CallID == id {
			return c
		}
	}
	return callView{}
}

// waitFor polls the run until cond holds.
func waitFor(t *testing.T, base, id, what string, cond func(runView) bool) runView {
	t.Helper()
	var v runView
	testinfra.Eventually(t, 30*time.Second, func() bool { v = getRun(t, base, id); return cond(v) },
		func() string { return fmt.Sprintf("%s; run is %s: %+v", what, v.Status, v.ToolCalls) })
	return v
}

func runEvents(t *testing.T, stack *app.Stack, id string) []pipeline.Event {
	t.Helper()
	events, err := stack.Store.Events(context.Background(), id, "", 10000)
	if err != nil {
		t.Fatal(err)
	}
	return events
}

func eventsOf(events []pipeline.Event, typ pipeline.EventType) []pipeline.Event {
	var out []pipeline.Event
	for _, e := range events {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

// The seeds' timeline: tool_A and tool_B need approval, tool_C runs and
// takes a while. A's decision while C runs is replayed at once; the run
// waits once C is done; the next inference starts only after B is decided.
func TestDecisions_the_seeds_timeline_holds_point_by_point(t *testing.T) {
	stack, base := approvalStack(t)
	id := createRun(t, base, "r-timeline", "approvals", script(
		call("A", "tool_a", `{"x":"a"}`), call("B", "tool_b", `{"x":"b"}`), call("C", "tool_c", `{"ms":3000}`)))

	// t2: A and B suspended, C running → the run is running.
	v := waitFor(t, base, id, "A and B suspended, C running", func(v runView) bool {
		return callOf(v, "A").Status == "suspended" && callOf(v, "B").Status == "suspended" && callOf(v, "C").Status == "running"
	})
	if v.Status != pipeline.RunRunning {
		t.Fatalf("t2: run is %s, want running", v.Status)
	}
	// t4–t5: A's decision arrives while C still runs and is replayed at once.
	decide(t, base, id, map[string]any{"decision_id": "d-a", "call_id": "A", "action": "resume", "decided_by": "alice"})
	v = waitFor(t, base, id, "A replayed", func(v runView) bool { return callOf(v, "A").Status == "succeeded" })
	if c := callOf(v, "C"); c.Status != "running" {
		t.Fatalf("A was replayed only after C finished (C is %s): not the concurrent model", c.Status)
	}
	if string(callOf(v, "A").Result) != `{"x":"a"}` {
		t.Fatalf("A result %s", callOf(v, "A").Result)
	}
	// t5: C done, B still suspended → waiting, and no next inference.
	v = waitFor(t, base, id, "waiting after C", func(v runView) bool { return v.Status == pipeline.RunWaiting })
	if v.Step != 0 || v.Termination.Reason != pipeline.ReasonSuspended || callOf(v, "C").Status != "succeeded" {
		t.Fatalf("t5: %+v", v)
	}
	if n := len(eventsOf(runEvents(t, stack, id), pipeline.EventStepStarted)); n != 1 {
		t.Fatalf("%d steps started while B was suspended", n)
	}
	// t6–t7: B decided → all terminal → next step → natural end.
	decide(t, base, id, map[string]any{"decision_id": "d-b", "call_id": "B", "action": "resume", "decided_by": "bob"})
	assertNaturalEnd(t, waitDone(t, base, id, 30*time.Second), 1)
	events := runEvents(t, stack, id)
	if len(eventsOf(events, pipeline.EventRunResumed)) != 1 || len(eventsOf(events, pipeline.EventDecisionApplied)) != 2 {
		t.Fatalf("events: %v", eventTypes(events))
	}
}

func TestDecisions_a_decision_published_with_kcat_resumes_the_run(t *testing.T) {
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("kcat is not installed (apt-get install -y kcat)")
		}
		t.Skip("kcat is not installed")
	}
	stack, base := approvalStack(t)
	id := createRun(t, base, "r-kcat", "approvals", script(call("A", "tool_a", `{"n":1}`)))
	waitFor(t, base, id, "A waiting", func(v runView) bool { return v.Status == pipeline.RunWaiting })

	decision := `{"decision_id":"kcat-1","run_id":"r-kcat","call_id":"A","action":"resume","decided_by":"ticketing"}`
	cmd := exec.Command(kcat, "-P", "-b", stack.Kafka.Brokers[0], "-t", stack.Names.Decisions(), "-k", id,
		"-X", "topic.partitioner=murmur2_random")
	cmd.Stdin = strings.NewReader(decision + "\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kcat: %v: %s", err, out)
	}
	v := waitDone(t, base, id, 30*time.Second)
	assertNaturalEnd(t, v, 1)
	if d := callOf(v, "A"); d.Status != "succeeded" {
		t.Fatalf("A: %+v", d)
	}
}

func TestDecisions_each_resume_mode_shapes_the_tools_arguments_or_result(t *testing.T) {
	stack, base := approvalStack(t)
	id := createRun(t, base, "r-modes", "approvals", script(
		call("replay", "tool_a", `{"orig":1}`),
		call("pass", "refund", `{"amount":500}`),
		call("result", "result_from_decision", `{"orig":3}`)))
	waitFor(t, base, id, "all suspended", func(v runView) bool { return v.Status == pipeline.RunWaiting })
	decide(t, base, id, map[string]any{"decision_id": "m1", "call_id": "replay", "action": "resume"})
	decide(t, base, id, map[string]any{"decision_id": "m2", "call_id": "pass", "action": "resume", "payload": map[string]any{"amount": 100, "note": "capped"}})
	decide(t, base, id, map[string]any{"decision_id": "m3", "call_id": "result", "action": "resume", "payload": map[string]any{"approved_by": "carol"}})
	v := waitDone(t, base, id, 30*time.Second)
	assertNaturalEnd(t, v, 1)

	if c := callOf(v, "replay"); string(c.Result) != `{"orig":1}` {
		t.Errorf("replay ran with %s, want the original arguments", c.Result)
	}
	if c := callOf(v, "pass"); canonical(t, c.Result) != canonical(t, map[string]any{"amount": 100, "note": "capped"}) ||
		canonical(t, c.Arguments) != canonical(t, map[string]any{"amount": 100, "note": "capped"}) {
		t.Errorf("pass_decision_to_tool: arguments %s result %s, want the payload", c.Arguments, c.Result)
	}
	if c := callOf(v, "result"); canonical(t, c.Result) != canonical(t, map[string]any{"approved_by": "carol"}) {
		t.Errorf("use_decision_as_result: result %s, want the payload", c.Result)
	}
	for _, e := range eventsOf(runEvents(t, stack, id), pipeline.EventToolCallStarted) {
		if e.CallID == "result" {
			t.Errorf("use_decision_as_result executed the tool")
		}
	}
}

func TestDecisions_refusals_are_recorded_and_change_nothing(t *testing.T) {
	stack, base := approvalStack(t)
	dead := collect(t, stack, stack.Names.DeadLetter())
	id := createRun(t, base, "r-refusals", "approvals", script(call("A", "tool_a", `{"n":1}`), call("E", "echo", `{"n":2}`)))
	waitFor(t, base, id, "waiting", func(v runView) bool { return v.Status == pipeline.RunWaiting })

	decide(t, base, id, map[string]any{"decision_id": "bad-hash", "call_id": "A", "action": "resume", "args_hash": strings.Repeat("0", 64)})
	decide(t, base, id, map[string]any{"decision_id": "not-suspended", "call_id": "E", "action": "cancel"})
	waitRejected(t, stack, id, "bad-hash", "args_hash")
	waitRejected(t, stack, id, "not-suspended", "not suspended")
	if v := getRun(t, base, id); v.Status != pipeline.RunWaiting || callOf(v, "A").Status != "suspended" || callOf(v, "E").Status != "succeeded" {
		t.Fatalf("a refused decision changed the run: %+v", v)
	}

	hash, err := pipeline.ArgsHash(json.RawMessage(`{"n":1}`))
	if err != nil {
		t.Fatal(err)
	}
	decide(t, base, id, map[string]any{"decision_id": "good", "call_id": "A", "action": "cancel", "args_hash": hash, "decided_by": "dave", "reason": "no"})
	decide(t, base, id, map[string]any{"decision_id": "good", "call_id": "A", "action": "resume"}) // repeated id: a no-op
	v := waitDone(t, base, id, 30*time.Second)
	assertNaturalEnd(t, v, 1)
	if c := callOf(v, "A"); c.Status != "cancelled" || !strings.Contains(c.Error, "dave") || !strings.Contains(c.Error, "no") {
		t.Fatalf("A: %+v", c)
	}
	msgs := getMessages(t, base, id)
	if !strings.Contains(msgs[2].Content, "dave") {
		t.Fatalf("the model was not told who cancelled: %+v", msgs[2])
	}
	if n := len(eventsOf(runEvents(t, stack, id), pipeline.EventDecisionApplied)); n != 1 {
		t.Fatalf("%d decisions applied, want 1 (the repeat is a no-op)", n)
	}
	decide(t, base, id, map[string]any{"decision_id": "after-done", "call_id": "A", "action": "resume"})
	waitRejected(t, stack, id, "after-done", "done")

	// A decision for a run nobody knows goes to the dead-letter topic.
	publishRaw(t, stack, stack.Names.Decisions(), `{"decision_id":"x","run_id":"no-such-run","call_id":"c","action":"resume"}`)
	testinfra.Eventually(t, 20*time.Second, func() bool {
		for _, d := range dead() {
			if strings.Contains(d.payload, "no-such-run") && strings.Contains(d.reason, "not found") {
				return true
			}
		}
		return false
	}, func() string { return fmt.Sprintf("dead letters: %+v", dead()) })
}

func waitRejected(t *testing.T, stack *app.Stack, runID, decisionID, reason string) {
	t.Helper()
	var got []pipeline.Event
	testinfra.Eventually(t, 20*time.Second, func() bool {
		got = eventsOf(runEvents(t, stack, runID), pipeline.EventDecisionRejected)
		for _, e := range got {
			if strings.Contains(string(e.Data), `"`+decisionID+`"`) && strings.Contains(string(e.Data), reason) {
				return true
			}
		}
		return false
	}, func() string { return fmt.Sprintf("decision %s not rejected for %q: %v", decisionID, reason, got) })
}

func TestDecisions_an_early_decision_is_held_until_its_call_parks_and_an_orphan_expires(t *testing.T) {
	stack, base := approvalStack(t)
	slow := `{"provider":"script","turns":[{"text":"thinking","delay_ms":1500,"tool_calls":[` + call("A", "tool_a", `{"n":1}`) + `]},{"text":"done"}]}`
	id := createRun(t, base, "r-early", "approvals", slow)
	decide(t, base, id, map[string]any{"decision_id": "early", "call_id": "A", "action": "resume"})
	decide(t, base, id, map[string]any{"decision_id": "orphan", "call_id": "Z", "action": "resume"})
	assertNaturalEnd(t, waitDone(t, base, id, 30*time.Second), 1)
	events := runEvents(t, stack, id)
	if len(eventsOf(events, pipeline.EventDecisionHeld)) < 1 || len(eventsOf(events, pipeline.EventDecisionApplied)) != 1 {
		t.Fatalf("events: %v", eventTypes(events))
	}
	waitRejected(t, stack, id, "orphan", "did not park")
}

func TestDecisions_an_approval_timeout_applies_on_timeout_and_says_so(t *testing.T) {
	stack, base := approvalStack(t)
	id := createRun(t, base, "r-timeout", "approvals", script(call("T", "timed", `{"n":1}`), call("R", "timed_resume", `{"n":2}`)))
	v := waitDone(t, base, id, 30*time.Second)
	assertNaturalEnd(t, v, 1)
	if c := callOf(v, "T"); c.Status != "cancelled" || !strings.Contains(c.Error, "timed out") {
		t.Fatalf("T: %+v", c)
	}
	if c := callOf(v, "R"); c.Status != "succeeded" || string(c.Result) != `{"n":2}` {
		t.Fatalf("R: %+v", c)
	}
	for _, e := range eventsOf(runEvents(t, stack, id), pipeline.EventDecisionApplied) {
		if !strings.Contains(string(e.Data), `"timeout":true`) {
			t.Fatalf("a timeout was recorded as a person's decision: %s", e.Data)
		}
	}
}

func TestDecisions_deny_blocks_the_run_and_ask_when_asks_only_when_it_holds(t *testing.T) {
	_, base := approvalStack(t)
	id := createRun(t, base, "r-deny", "approvals", script(call("D", "deny_me", `{}`), call("after", "echo", `{}`)))
	v := waitDone(t, base, id, 30*time.Second)
	if v.Termination.Reason != pipeline.ReasonBlocked || callOf(v, "D").Status != "failed" || callOf(v, "after").Status != "cancelled" {
		t.Fatalf("deny: %+v", v)
	}

	id = createRun(t, base, "r-ask-when", "approvals", script(call("small", "refund", `{"amount":20}`), call("big", "refund", `{"amount":200}`)))
	v = waitFor(t, base, id, "big suspended", func(v runView) bool { return v.Status == pipeline.RunWaiting })
	if callOf(v, "small").Status != "succeeded" || callOf(v, "big").Status != "suspended" {
		t.Fatalf("ask_when: %+v", v.ToolCalls)
	}
}

func TestDecisions_cancel_ends_the_run_from_created_running_and_waiting(t *testing.T) {
	stack, base := approvalStack(t)
	ctx := context.Background()
	cancel := func(id string) {
		t.Helper()
		if code := httpDo(t, http.MethodPost, base+"/v1/runs/"+id+"/cancel", map[string]any{"reason": "test", "decided_by": "eve"}, nil); code != http.StatusAccepted {
			t.Fatalf("cancel %s: %d", id, code)
		}
	}
	// created: a run nobody has started (no step requested).
	now := time.Now()
	if _, _, err := stack.Store.CreateRun(ctx, pipeline.Run{ID: "r-cancel-created", Agent: "approvals", RequestHash: "x"},
		[]pipeline.Message{{Role: "user", Content: "go"}}, now); err != nil {
		t.Fatal(err)
	}
	cancel("r-cancel-created")
	// running: a slow tool.
	running := createRun(t, base, "r-cancel-running", "approvals", script(call("S", "sleep", `{"ms":4000}`)))
	waitFor(t, base, running, "S running", func(v runView) bool { return callOf(v, "S").Status == "running" })
	cancel(running)
	// waiting: a suspended call.
	waiting := createRun(t, base, "r-cancel-waiting", "approvals", script(call("A", "tool_a", `{}`)))
	waitFor(t, base, waiting, "waiting", func(v runView) bool { return v.Status == pipeline.RunWaiting })
	cancel(waiting)

	for _, id := range []string{"r-cancel-created", running, waiting} {
		v := waitDone(t, base, id, 30*time.Second)
		if v.Termination.Reason != pipeline.ReasonCancelled || !strings.Contains(v.Termination.Detail, "eve") {
			t.Fatalf("%s: %+v", id, v.Termination)
		}
		for _, c := range v.ToolCalls {
			if c.Status != "cancelled" {
				t.Fatalf("%s: call %s is %s after the cancel", id, c.CallID, c.Status)
			}
		}
	}
	decide(t, base, waiting, map[string]any{"decision_id": "late", "call_id": "A", "action": "resume"})
	waitRejected(t, stack, waiting, "late", "done")
}

func TestDecisions_a_tool_that_returns_pending_parks_and_resumes(t *testing.T) {
	_, base := approvalStack(t)
	id := createRun(t, base, "r-pending", "approvals", script(call("J", "external", `{"reason":"job 42 queued"}`)))
	v := waitFor(t, base, id, "J suspended by its tool", func(v runView) bool { return v.Status == pipeline.RunWaiting })
	if c := callOf(v, "J"); c.Status != "suspended" {
		t.Fatalf("J: %+v", c)
	}
	decide(t, base, id, map[string]any{"decision_id": "job-done", "call_id": "J", "action": "resume", "payload": map[string]any{"result": map[string]any{"rows": 7}}})
	v = waitDone(t, base, id, 30*time.Second)
	assertNaturalEnd(t, v, 1)
	if c := callOf(v, "J"); c.Status != "succeeded" || string(c.Result) != `{"rows":7}` {
		t.Fatalf("J: %+v", c)
	}
}

func TestDecisions_a_frontend_tool_takes_its_result_from_the_decision(t *testing.T) {
	_, base := approvalStack(t)
	id := createRun(t, base, "r-frontend", "approvals", script(call("U", "ui", `{"question":"color?"}`)))
	waitFor(t, base, id, "U suspended", func(v runView) bool { return v.Status == pipeline.RunWaiting })
	decide(t, base, id, map[string]any{"decision_id": "ui-1", "call_id": "U", "action": "resume", "payload": "blue"})
	v := waitDone(t, base, id, 30*time.Second)
	if c := callOf(v, "U"); c.Status != "succeeded" || string(c.Result) != `"blue"` {
		t.Fatalf("U: %+v", c)
	}
	if msgs := getMessages(t, base, id); msgs[2].Content != "blue" {
		t.Fatalf("the model got %q", msgs[2].Content)
	}
}

func TestDecisions_survive_a_restart_of_both_workers(t *testing.T) {
	in := newInfra(t)
	cfg := parseConfig(t, approvalsConfig)
	stack := connect(t, in, cfg)
	stopSteps := start(t, stack.RunStepWorker)
	stopTools := start(t, func(ctx context.Context) error { return stack.RunToolWorker(ctx, nil) })
	base := serve(t, stack)
	id := createRun(t, base, "r-restart", "approvals", script(call("A", "tool_a", `{"n":1}`), call("B", "echo", `{"n":2}`)))
	waitFor(t, base, id, "waiting", func(v runView) bool { return v.Status == pipeline.RunWaiting })
	stopSteps()
	stopTools()

	decide(t, base, id, map[string]any{"decision_id": "after-restart", "call_id": "A", "action": "resume"})
	fresh := connect(t, in, cfg) // new workers, as after a restart: all they know is in Redis and Kafka
	workers(t, fresh)
	assertNaturalEnd(t, waitDone(t, base, id, 40*time.Second), 1)
}
