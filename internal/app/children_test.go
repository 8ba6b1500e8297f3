package app_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stepwise-run/stepwise/internal/tooling/testinfra"
	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/versions"
)

// childrenConfig has a researcher whose tool summarise is the agent
// summariser, which answers at once, a tool slow_summarise whose agent
// waits for an approval nobody gives, and a tool delegate whose agent
// calls summarise in turn, one level deeper than runs.children allows.
const childrenConfig = `
kafka: {partitions: 4}
stepworker: {lease: 1s, sweep_interval: 100ms, dispatch_timeout: 3s, max_attempts: 3}
toolworker: {lease: 1s, default_timeout: 10s}
runs: {children: {max_depth: 1, max_per_run: 25}}
agents:
  researcher:
    model: {provider: script, turns: [{text: "hi"}]}
    tools: [summarise, slow_summarise, delegate, sleep]
  summariser:
    model: {provider: script, turns: [{text: "a summary", usage: {input_tokens: 80, output_tokens: 20}}]}
    tools: [summarise]
  delegator:
    model: {provider: script, turns: [{text: "deeper", tool_calls: [{name: summarise, arguments: {document: deep}}]}, {text: "delegated"}]}
    tools: [summarise]
  waiter:
    model: {provider: script, turns: [{text: "asking", tool_calls: [{name: approve_me, arguments: {x: 1}}]}, {text: "never"}]}
    tools: [approve_me]
tools:
  summarise:
    parameters: {type: object, properties: {document: {type: string}}, required: [document]}
    executor: {agent: summariser, input: "Summarise: {{.document}}"}
  slow_summarise:
    executor: {agent: waiter}
  delegate:
    executor: {agent: delegator}
  approve_me: {executor: {builtin: echo}, permission: ask}
`

// childrenStack runs a gateway and both workers with the configuration
// yaml, and returns the gateway's base URL.
func childrenStack(t *testing.T, yaml string) string {
	t.Helper()
	stack := connect(t, newInfra(t), parseConfig(t, yaml))
	workers(t, stack)
	return serve(t, stack)
}

// childView is GET /v1/runs/{id} with the tree.
type childView struct {
	RunID        string             `json:"run_id"`
	Status       pipeline.RunStatus `json:"status"`
	ParentRunID  string             `json:"parent_run_id"`
	ParentCallID string             `json:"parent_call_id"`
	AgentVersion string             `json:"agent_version"`
	Termination  pipeline.Termination
	Children     []struct {
		RunID  string             `json:"run_id"`
		CallID string             `json:"call_id"`
		Status pipeline.RunStatus `json:"status"`
	} `json:"children"`
}

func getTree(t *testing.T, base, id string) childView {
	t.Helper()
	var v childView
	if code := httpDo(t, http.MethodGet, base+"/v1/runs/"+id, nil, &v); code != http.StatusOK {
		t.Fatalf("get run %s: status %d", id, code)
	}
	return v
}

// fanOut is a script that calls tool n times at once, on documents doc-0
// ... doc-<n-1>, then answers "done".
func fanOut(tool string, n int) string {
	return `{"provider":"script","turns":[{"text":"fan out","tool_calls":` + fanOutCalls(tool, n) + `},{"text":"done"}]}`
}

// fanOutCalls are fanOut's calls, a JSON list.
func fanOutCalls(tool string, n int) string {
	calls := make([]string, n)
	for i := range calls {
		calls[i] = fmt.Sprintf(`{"id":"c%d","name":%q,"arguments":{"document":"doc-%d"}}`, i, tool, i)
	}
	return "[" + strings.Join(calls, ",") + "]"
}

// A researcher calls summarise on 20 documents at once: each call starts a
// child run of summariser with the input its template makes, the 20 run in
// parallel, and each child's answer is its call's result in the
// researcher's conversation; GET /v1/runs shows the tree both ways.
func TestChildren_twenty_summarisers_answer_a_researchers_parallel_calls(t *testing.T) {
	base := childrenStack(t, childrenConfig)

	id := createRun(t, base, "research-1", "researcher", fanOut("summarise", 20))
	run := waitDone(t, base, id, 60*time.Second)
	if run.Termination.Reason != pipeline.ReasonNaturalEnd || run.Step != 1 {
		t.Fatalf("researcher ended %+v at step %d", run.Termination, run.Step)
	}
	answers := 0
	for _, m := range getMessages(t, base, id) {
		if m.Role == pipeline.RoleTool {
			if m.Content != "a summary" {
				t.Errorf("tool message %s: %q, want the child's answer", m.ToolCallID, m.Content)
			}
			answers++
		}
	}
	if answers != 20 {
		t.Fatalf("%d tool messages, want 20", answers)
	}
	tree := getTree(t, base, id)
	if len(tree.Children) != 20 {
		t.Fatalf("%d children listed, want 20: %+v", len(tree.Children), tree.Children)
	}
	vs, err := versions.New(parseConfig(t, childrenConfig), nil)
	if err != nil {
		t.Fatal(err)
	}
	summariser, _ := vs.Current("summariser")
	for i, c := range tree.Children {
		if c.CallID != fmt.Sprintf("c%d", i) || c.RunID != id+"."+c.CallID || c.Status != pipeline.RunDone {
			t.Errorf("child %d: %+v", i, c)
		}
		child := getTree(t, base, c.RunID)
		if child.ParentRunID != id || child.ParentCallID != c.CallID {
			t.Errorf("child %s names parent %q call %q", c.RunID, child.ParentRunID, child.ParentCallID)
		}
		if child.AgentVersion != summariser.Hash { // pinned when it started (ADR 0068)
			t.Errorf("child %s is on version %q, want summariser's %q", c.RunID, child.AgentVersion, summariser.Hash)
		}
		msgs := getMessages(t, base, c.RunID)
		if want := fmt.Sprintf("Summarise: doc-%d", i); len(msgs) == 0 || msgs[0].Content != want {
			t.Errorf("child %s was asked %+v, want %q", c.RunID, msgs, want)
		}
	}
}

// A researcher cancelled while its children wait cancels them: each child
// ends cancelled, named as cancelled by its parent's end.
func TestChildren_cancelling_a_parent_cancels_its_children(t *testing.T) {
	base := childrenStack(t, childrenConfig)

	id := createRun(t, base, "research-2", "researcher", fanOut("slow_summarise", 5))
	testinfra.Eventually(t, 30*time.Second, func() bool {
		tree := getTree(t, base, id)
		waiting := 0
		for _, c := range tree.Children {
			if getTree(t, base, c.RunID).Status == pipeline.RunWaiting {
				waiting++
			}
		}
		return waiting == 5
	}, func() string {
		return fmt.Sprintf("children of %s not all waiting: %+v", id, getTree(t, base, id).Children)
	})

	// A call waiting for its child asks nobody: the five pending calls are
	// the children's approvals, none of the parent's.
	var pending struct {
		Pending []struct {
			RunID string `json:"run_id"`
		} `json:"pending"`
	}
	if code := httpDo(t, http.MethodGet, base+"/v1/pending", nil, &pending); code != http.StatusOK || len(pending.Pending) != 5 {
		t.Errorf("pending: status %d, %+v; want the five children's approvals", code, pending.Pending)
	}
	for _, p := range pending.Pending {
		if p.RunID == id {
			t.Errorf("the parent's call waiting for its child is listed pending: %+v", pending.Pending)
		}
	}

	if code := httpDo(t, http.MethodPost, base+"/v1/runs/"+id+"/cancel", map[string]any{"reason": "enough"}, nil); code != http.StatusAccepted {
		t.Fatalf("cancel: %d", code)
	}
	waitDone(t, base, id, 30*time.Second)
	for i := range 5 {
		child := waitDone(t, base, fmt.Sprintf("%s.c%d", id, i), 30*time.Second)
		if child.Termination.Reason != pipeline.ReasonCancelled || !strings.Contains(child.Termination.Detail, "parent run "+id+" ended") {
			t.Errorf("child %d ended %+v", i, child.Termination)
		}
	}
}

// A call waiting for its child that a person cancels cancels the child
// too, at the end of its step, while the parent goes on: the child's work
// is no longer awaited by anyone.
func TestChildren_a_call_cancelled_by_a_decision_cancels_its_child_while_the_parent_goes_on(t *testing.T) {
	base := childrenStack(t, childrenConfig)
	model := `{"provider":"script","turns":[{"text":"ask","tool_calls":[{"id":"c0","name":"slow_summarise","arguments":{}}]},` +
		`{"text":"wait","tool_calls":[{"id":"s","name":"sleep","arguments":{"ms":20000}}]},{"text":"done"}]}`
	id := createRun(t, base, "research-orphan", "researcher", model)
	child := id + ".c0"
	var v childView
	testinfra.Eventually(t, 30*time.Second, func() bool {
		return httpDo(t, http.MethodGet, base+"/v1/runs/"+child, nil, &v) == http.StatusOK && v.Status == pipeline.RunWaiting
	}, func() string { return fmt.Sprintf("child %s: %+v", child, v) })

	decision := map[string]any{"call_id": "c0", "action": "cancel", "decided_by": "alice", "reason": "not needed"}
	if code := httpDo(t, http.MethodPost, base+"/v1/runs/"+id+"/decisions", decision, nil); code != http.StatusAccepted {
		t.Fatalf("decision: %d", code)
	}
	got := waitDone(t, base, child, 15*time.Second)
	if got.Termination.Reason != pipeline.ReasonCancelled || !strings.Contains(got.Termination.Detail, "ended without it") {
		t.Errorf("the child ended %+v", got.Termination)
	}
	if parent := getTree(t, base, id); parent.Status == pipeline.RunDone {
		t.Errorf("the parent is done (%+v): the child was cancelled by its end, not by its call's", parent.Termination)
	}
	httpDo(t, http.MethodPost, base+"/v1/runs/"+id+"/cancel", nil, nil)
}

// A child may not start a child of its own past runs.children.max_depth
// (1 here): its call fails with an error saying so, no grandchild starts,
// and the child answers its parent all the same.
func TestChildren_a_call_past_the_depth_limit_fails_and_starts_nothing(t *testing.T) {
	base := childrenStack(t, childrenConfig)

	model := `{"provider":"script","turns":[{"text":"one","tool_calls":[{"id":"c0","name":"delegate","arguments":{}}]},{"text":"done"}]}`
	id := createRun(t, base, "research-3", "researcher", model)
	if run := waitDone(t, base, id, 30*time.Second); run.Termination.Reason != pipeline.ReasonNaturalEnd {
		t.Fatalf("researcher ended %+v", run.Termination)
	}
	child := getRun(t, base, id+".c0")
	if len(child.ToolCalls) != 1 {
		t.Fatalf("the child made calls %+v, want one", child.ToolCalls)
	}
	c := child.ToolCalls[0]
	if c.Status != pipeline.CallFailed || !strings.Contains(c.Error, "at depth 2, over runs.children.max_depth (1)") {
		t.Fatalf("the child's call ended %s: %q", c.Status, c.Error)
	}
	if code := httpDo(t, http.MethodGet, base+"/v1/runs/"+id+".c0."+c.CallID, nil, nil); code != http.StatusNotFound {
		t.Fatalf("grandchild: status %d, want 404", code)
	}
	if tree := getTree(t, base, id+".c0"); len(tree.Children) != 0 {
		t.Fatalf("the child lists children %+v", tree.Children)
	}
	for _, m := range getMessages(t, base, id) {
		if m.Role == pipeline.RoleTool && m.Content != "delegated" {
			t.Fatalf("the researcher was told %q, want the child's answer", m.Content)
		}
	}
}

// A run may start runs.children.max_per_run children in all (2 here): of
// three calls at once, the third fails with an error saying so, and only
// two children start.
func TestChildren_a_call_past_the_children_per_run_fails_and_starts_nothing(t *testing.T) {
	base := childrenStack(t, strings.Replace(childrenConfig, "max_per_run: 25", "max_per_run: 2", 1))

	id := createRun(t, base, "research-4", "researcher", fanOut("summarise", 3))
	run := waitDone(t, base, id, 30*time.Second)
	if c := run.ToolCalls[2]; c.Status != pipeline.CallFailed || !strings.Contains(c.Error, "has started 2 child runs, runs.children.max_per_run") {
		t.Fatalf("the third call ended %s: %q", c.Status, c.Error)
	}
	if tree := getTree(t, base, id); len(tree.Children) != 2 {
		t.Fatalf("children %+v, want c0 and c1", tree.Children)
	}
	if code := httpDo(t, http.MethodGet, base+"/v1/runs/"+id+".c2", nil, nil); code != http.StatusNotFound {
		t.Fatalf("a third child: status %d, want 404", code)
	}
}

// A child's steps reserve from its parent's batch budget: with 500 tokens
// for a researcher (100 a step) and five summarisers (100 each, 120
// reserved a step), not all five get to answer; those the budget cannot
// carry stop with code budget, and the tree never uses more than the
// budget.
func TestChildren_children_spend_their_parents_batch_budget(t *testing.T) {
	base := childrenStack(t, childrenConfig+"budgets: {reserve_tokens: 120}\n")
	model := `{"provider":"script","turns":[{"text":"fan out","usage":{"input_tokens":100},"tool_calls":` + fanOutCalls("summarise", 5) + `},{"text":"done"}]}`
	items := []map[string]any{{"run_id": "research-5", "agent": "researcher", "input": "go", "model": json.RawMessage(model)}}
	sendBatch(t, base, items, "?token_budget=500", 60*time.Second)
	used, stopped := getRun(t, base, "research-5").Usage.Total(), 0
	for i := range 5 {
		child := waitDone(t, base, fmt.Sprintf("research-5.c%d", i), 30*time.Second)
		used += child.Usage.Total()
		if child.Termination.Reason == pipeline.ReasonStopped && child.Termination.Code == "budget" {
			stopped++
		}
	}
	if stopped == 0 || used > 500 {
		t.Fatalf("%d children stopped by the budget, the tree used %d tokens: want some stopped, at most 500 used", stopped, used)
	}
}
