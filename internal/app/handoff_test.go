package app_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stepwise-run/stepwise/internal/app"
	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/store"
	"github.com/stepwise-run/stepwise/pipeline/versions"
)

// handoffConfig has triage, which answers by handing the run to refunds,
// and refunds, which alone offers issue_refund and calls it; and two
// agents that hand a run to each other at every turn, under a limit of
// two handoffs a run and four rounds.
const handoffConfig = `
runs: {max_handoffs: 2}
kafka: {partitions: 4}
stepworker: {lease: 2s, sweep_interval: 100ms, dispatch_timeout: 3s}
toolworker: {lease: 2s}
agents:
  triage:
    model: {provider: script, turns: [{text: "over to refunds", tool_calls: [{name: transfer_to_refunds, arguments: {}}]}]}
    system: You sort requests.
    tools: [echo]
    handoffs: [refunds]
  refunds:
    description: Refunds orders.
    model:
      provider: script
      turns:
        - {text: "refunds never answers step 0"}
        - {text: "refunding", tool_calls: [{name: issue_refund, arguments: {order: 7}}]}
        - {text: "refunded order 7"}
    system: You refund orders.
    tools: [issue_refund]
  ping:
    model: {provider: script, loop_last: true, turns: [{text: "to pong", tool_calls: [{name: transfer_to_pong, arguments: {}}]}]}
    handoffs: [pong]
    stop: {max_rounds: 4}
  pong:
    model: {provider: script, loop_last: true, turns: [{text: "to ping", tool_calls: [{name: transfer_to_ping, arguments: {}}]}]}
    handoffs: [ping]
    stop: {max_rounds: 4}
tools:
  issue_refund: {executor: {builtin: echo}}
`

// startAgent creates a run of agent with the configuration's model.
func startAgent(t *testing.T, base, runID, agent string) {
	t.Helper()
	body := map[string]any{"run_id": runID, "agent": agent, "input": "refund order 7"}
	if code := httpDo(t, http.MethodPost, base+"/v1/runs", body, nil); code != http.StatusCreated {
		t.Fatalf("create run: status %d", code)
	}
}

// heldBy is GET /v1/runs/{id}'s agents: the one it started with and the
// one that holds it.
func heldBy(t *testing.T, base, id string) (agent, current string) {
	t.Helper()
	var v struct {
		Agent        string `json:"agent"`
		CurrentAgent string `json:"current_agent"`
	}
	if code := httpDo(t, http.MethodGet, base+"/v1/runs/"+id, nil, &v); code != http.StatusOK {
		t.Fatalf("get run %s: status %d", id, code)
	}
	return v.Agent, v.CurrentAgent
}

// handoffsOf is the {from, to} of each run.handoff event, in order.
func handoffsOf(t *testing.T, events []pipeline.Event) [][2]string {
	t.Helper()
	var out [][2]string
	for _, e := range eventsOf(events, pipeline.EventRunHandoff) {
		var d struct{ From, To string }
		if err := json.Unmarshal(e.Data, &d); err != nil {
			t.Fatalf("run.handoff data %s: %v", e.Data, err)
		}
		out = append(out, [2]string{d.From, d.To})
	}
	return out
}

// handedOff runs a run of agent on handoffConfig to its end.
func handedOff(t *testing.T, runID, agent string) (*app.Stack, string, runView) {
	t.Helper()
	stack := connect(t, newInfra(t), parseConfig(t, handoffConfig))
	workers(t, stack)
	base := serve(t, stack)
	startAgent(t, base, runID, agent)
	return stack, base, waitDone(t, base, runID, 30*time.Second)
}

func TestHandoff_triage_hands_the_run_to_refunds_which_goes_on_with_its_own_tools(t *testing.T) {
	stack, base, v := handedOff(t, "r-handoff", "triage")
	assertNaturalEnd(t, v, 2)
	if agent, current := heldBy(t, base, "r-handoff"); agent != "triage" || current != "refunds" {
		t.Fatalf("agent %q, current_agent %q; want the run of triage held by refunds", agent, current)
	}
	if len(v.ToolCalls) != 2 {
		t.Fatalf("tool calls %+v; want the handoff and the refund", v.ToolCalls)
	}
	handoff, refund := v.ToolCalls[0], v.ToolCalls[1]
	if handoff.Tool != "transfer_to_refunds" || handoff.Step != 0 || handoff.Status != pipeline.CallSucceeded {
		t.Fatalf("handoff call %+v", handoff)
	}
	if got, want := canonical(t, handoff.Result), canonical(t, json.RawMessage(`{"assistant":"refunds"}`)); got != want {
		t.Fatalf("handoff result %s; want %s", got, want)
	}
	// triage does not offer issue_refund: it ran because refunds held step 1.
	if refund.Tool != "issue_refund" || refund.Step != 1 || refund.Status != pipeline.CallSucceeded {
		t.Fatalf("refund call %+v; want issue_refund run at step 1", refund)
	}
	msgs := getMessages(t, base, "r-handoff")
	if last := msgs[len(msgs)-1]; last.Content != "refunded order 7" {
		t.Fatalf("last message %+v; want refunds' answer", last)
	}
	events := runEvents(t, stack, "r-handoff")
	if got := handoffsOf(t, events); len(got) != 1 || got[0] != [2]string{"triage", "refunds"} {
		t.Fatalf("run.handoff events %v; want one, from triage to refunds", got)
	}
	if e := eventsOf(events, pipeline.EventRunHandoff)[0]; e.Step != 0 || e.CallID != handoff.CallID {
		t.Fatalf("run.handoff %+v; want step 0, call %s", e, handoff.CallID)
	}
	// The handoff pinned the run to refunds' version (ADR 0068).
	vs, err := versions.New(stack.Config, stack.Store)
	if err != nil {
		t.Fatal(err)
	}
	if refunds, _ := vs.Current("refunds"); v.AgentVersion != refunds.Hash {
		t.Fatalf("the handed-off run is on version %q, want refunds' %q", v.AgentVersion, refunds.Hash)
	}
}

func TestHandoff_past_max_handoffs_is_refused_and_max_rounds_counts_across_holders(t *testing.T) {
	stack, base, v := handedOff(t, "r-pingpong", "ping")
	if v.Termination.Reason != pipeline.ReasonStopped || v.Termination.Code != "max_rounds" || v.Step != 3 {
		t.Fatalf("run ended %+v at step %d; want stopped by max_rounds at step 3", v.Termination, v.Step)
	}
	got := handoffsOf(t, runEvents(t, stack, "r-pingpong"))
	if len(got) != 2 || got[0] != [2]string{"ping", "pong"} || got[1] != [2]string{"pong", "ping"} {
		t.Fatalf("run.handoff events %v; want ping→pong, pong→ping and no more", got)
	}
	if _, current := heldBy(t, base, "r-pingpong"); current != "ping" {
		t.Fatalf("current_agent %q; want ping, whom the last handoff allowed gave it to", current)
	}
	for _, c := range v.ToolCalls[2:] {
		if c.Status != pipeline.CallFailed || !strings.Contains(c.Error, "runs.max_handoffs") {
			t.Fatalf("call %+v past the limit; want it failed, naming runs.max_handoffs", c)
		}
	}
}

// inference is one request a fake OpenAI endpoint received: the model it
// names, its messages and the names and descriptions of its tools.
type inference struct {
	Model    string
	Messages []map[string]any
	Tools    map[string]string // name → description
}

// fakeOpenAI is an OpenAI-compatible endpoint that answers each request
// with answer(model) as the assistant message, and keeps the requests.
func fakeOpenAI(t *testing.T, answer func(model string) string) (url string, got func() []inference) {
	t.Helper()
	var mu sync.Mutex
	var reqs []inference
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Model    string           `json:"model"`
			Messages []map[string]any `json:"messages"`
			Tools    []struct {
				Function struct{ Name, Description string } `json:"function"`
			} `json:"tools"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		in := inference{Model: body.Model, Messages: body.Messages, Tools: map[string]string{}}
		for _, tool := range body.Tools {
			in.Tools[tool.Function.Name] = tool.Function.Description
		}
		mu.Lock()
		reqs = append(reqs, in)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"c","object":"chat.completion","created":1,"model":%q,"choices":[{"index":0,"message":%s,"finish_reason":"stop"}],`+
			`"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`, body.Model, answer(body.Model))
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1", func() []inference {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(reqs)
	}
}

func TestHandoff_the_agent_handed_a_run_is_asked_with_its_instructions_tools_and_the_history_it_takes(t *testing.T) {
	t.Setenv("STEPWISE_TEST_HANDOFF_KEY", "k")
	url, requests := fakeOpenAI(t, func(model string) string {
		if model == "triage-model" {
			return `{"role":"assistant","content":"","tool_calls":[{"id":"h1","type":"function","function":{"name":"transfer_to_refunds","arguments":"{}"}}]}`
		}
		return `{"role":"assistant","content":"refunded"}`
	})
	model := func(name string) string {
		return fmt.Sprintf("{provider: openai, name: %s, base_url: %q, api_key_env: STEPWISE_TEST_HANDOFF_KEY, stream: false}", name, url)
	}
	stack := connect(t, newInfra(t), parseConfig(t, `
kafka: {partitions: 4}
stepworker: {lease: 2s, sweep_interval: 100ms, dispatch_timeout: 3s}
agents:
  triage: {model: `+model("triage-model")+`, system: You sort requests., tools: [echo], handoffs: [refunds]}
  refunds: {model: `+model("refunds-model")+`, system: You refund orders., description: Refunds orders.,
            tools: [issue_refund], handoff_history: last_user}
tools:
  issue_refund: {executor: {builtin: echo}}
`))
	workers(t, stack)
	base := serve(t, stack)
	startAgent(t, base, "r-asked", "triage")
	assertNaturalEnd(t, waitDone(t, base, "r-asked", 30*time.Second), 1)

	reqs := requests()
	if len(reqs) != 2 || reqs[0].Model != "triage-model" || reqs[1].Model != "refunds-model" {
		t.Fatalf("requests %+v; want triage's model asked, then refunds'", reqs)
	}
	triage, refunds := reqs[0], reqs[1]
	if want := map[string]string{"echo": triage.Tools["echo"], "transfer_to_refunds": "Handoff to the refunds agent to handle the request. Refunds orders."}; !maps.Equal(triage.Tools, want) {
		t.Errorf("triage was offered %v; want %v", triage.Tools, want)
	}
	if _, ok := refunds.Tools["issue_refund"]; !ok || len(refunds.Tools) != 1 {
		t.Errorf("refunds was offered %v; want its issue_refund alone", refunds.Tools)
	}
	// last_user: the system prompt of refunds and the user's message, not
	// the turn that handed the run off.
	want := `[{"content":"You refund orders.","role":"system"},{"content":"refund order 7","role":"user"}]`
	if got := canonical(t, refunds.Messages); got != canonical(t, json.RawMessage(want)) {
		t.Errorf("refunds was asked with\n%s\nwant\n%s", got, want)
	}
}

// A chat whose first turn triage handed to refunds goes on with refunds:
// the next turn's run is refunds', though the client names triage again,
// as the OpenAI Agents SDK goes on with a result's last agent.
func TestHandoff_the_next_chat_turn_is_answered_by_the_agent_that_holds_the_chat(t *testing.T) {
	stack := connect(t, newInfra(t), parseConfig(t, handoffConfig))
	workers(t, stack)
	base := serve(t, stack)
	url := base + "/v1/ai-sdk/chat?agent=triage"
	user := func(id, text string) map[string]any {
		return map[string]any{"id": id, "role": "user", "parts": []any{map[string]any{"type": "text", "text": text}}}
	}
	first := []any{user("u1", "refund order 7")}
	chatResponse(t, url, map[string]any{"id": "c-handoff", "messages": first})
	turn1 := waitDone(t, base, "c-handoff", 30*time.Second)
	if agent, current := heldBy(t, base, turn1.RunID); agent != "triage" || current != "refunds" {
		t.Fatalf("turn 1: agent %q, current_agent %q; want triage's run held by refunds", agent, current)
	}
	second := append(first,
		map[string]any{"id": "a1", "role": "assistant", "parts": []any{map[string]any{"type": "text", "text": "refunded order 7"}}},
		user("u2", "thanks, and order 8?"))
	chatResponse(t, url, map[string]any{"id": "c-handoff", "messages": second})
	turn2 := store.ThreadRunID("c-handoff", 2)
	waitDone(t, base, turn2, 30*time.Second)
	if agent, _ := heldBy(t, base, turn2); agent != "refunds" {
		t.Errorf("turn 2 is agent %q's; want refunds, which held the chat", agent)
	}
}
