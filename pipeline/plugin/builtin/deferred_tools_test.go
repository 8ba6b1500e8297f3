package builtin_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/model"
	"github.com/stepwise-run/stepwise/pipeline/plugin"
	"github.com/stepwise-run/stepwise/pipeline/plugin/builtin"
)

// agentTools are the tools the worker offers the agent at every step.
func agentTools() []model.ToolSpec {
	return []model.ToolSpec{
		{Name: "lookup_order", Description: "Look up an order by id.", Parameters: json.RawMessage(`{"type": "object"}`)},
		{Name: "issue_refund", Description: "Refund an order.", Parameters: json.RawMessage(`{"type":"object","properties":{"amount":{"type":"number"}}}`)},
		{Name: "export_report", Description: "Export a sales report as CSV."},
	}
}

func toolNames(tools []model.ToolSpec) []string {
	out := make([]string, len(tools))
	for i, t := range tools {
		out[i] = t.Name
	}
	return out
}

// beforeInference runs BeforeInference of a step on the agent's tools.
func beforeInference(t *testing.T, set *plugin.Set, state plugin.State, pending ...plugin.Action) *plugin.Context {
	t.Helper()
	pc := &plugin.Context{
		Phase: pipeline.PhaseBeforeInference, Run: pipeline.Run{ID: "r-1"},
		State: state, Request: &plugin.Request{Tools: agentTools()},
	}
	run(t, set, pc, pending...)
	return pc
}

// gate runs ToolGate for one call.
func gate(t *testing.T, set *plugin.Set, state plugin.State, tool, args string) *plugin.Context {
	t.Helper()
	pc := &plugin.Context{
		Phase: pipeline.PhaseToolGate, Run: pipeline.Run{ID: "r-1"}, State: state,
		Call: &pipeline.ToolCall{ID: "c-1", Tool: tool, Arguments: json.RawMessage(args)},
	}
	run(t, set, pc)
	return pc
}

func searchResult(t *testing.T, pc *plugin.Context) builtin.SearchResult {
	t.Helper()
	if len(pc.Intercepts) != 1 || pc.Intercepts[0].Action != pipeline.GateSetResult {
		t.Fatalf("intercepts %+v, want one set_result", pc.Intercepts)
	}
	var res builtin.SearchResult
	if err := json.Unmarshal(pc.Intercepts[0].Result, &res); err != nil {
		t.Fatalf("result %s: %v", pc.Intercepts[0].Result, err)
	}
	return res
}

func TestDeferredTools_first_step_hides_the_deferred_tools_behind_tool_search(t *testing.T) {
	set := build(t, builtin.DeferredTools, `{"defer": ["issue_refund", "export_report"]}`)
	pc := beforeInference(t, set, nil)

	if got, want := toolNames(pc.Request.Tools), []string{"lookup_order", builtin.ToolSearch}; !slices.Equal(got, want) {
		t.Fatalf("tools %v, want %v", got, want)
	}
	search := pc.Request.Tools[1]
	if search.Description == "" || !strings.Contains(string(search.Parameters), `"query"`) {
		t.Errorf("tool_search spec %+v lacks a description or a query parameter", search)
	}
	if got, _ := get(t, pc.State, builtin.DeferredKey); !slices.Equal(got, []string{"export_report", "issue_refund"}) {
		t.Errorf("deferred %v", got)
	}
	if catalog, _ := get(t, pc.State, builtin.DeferredCatalogKey); catalog["issue_refund"].Description != "Refund an order." {
		t.Errorf("catalog %+v lacks issue_refund's spec", catalog)
	}
}

func TestDeferredTools_keys_are_persistent(t *testing.T) {
	set := build(t, builtin.DeferredTools, `{"defer": ["issue_refund"]}`)
	for _, k := range []string{builtin.DeferredKey.Name, builtin.DeferredCatalogKey.Name} {
		if !set.Persistent(k) {
			t.Errorf("%s is not persistent", k)
		}
	}
	pc := beforeInference(t, set, nil)
	if got := set.PersistentUpdates(pc.Updates); len(got) == 0 {
		t.Fatal("the first step committed no persistent update")
	}
}

func TestDeferredTools_without_deferred_tools_offers_no_tool_search(t *testing.T) {
	set := build(t, builtin.DeferredTools, "")
	pc := beforeInference(t, set, nil)
	if got := toolNames(pc.Request.Tools); !slices.Equal(got, toolNames(agentTools())) {
		t.Fatalf("tools %v, want the agent's unchanged", got)
	}
}

func TestDeferredTools_search_answers_with_specs_and_promotes_for_the_next_step(t *testing.T) {
	set := build(t, builtin.DeferredTools, `{"defer": ["issue_refund", "export_report"]}`)
	state := checkpoint(set, beforeInference(t, set, nil).State)

	pc := gate(t, set, state, builtin.ToolSearch, `{"query": "refund"}`)
	res := searchResult(t, pc)
	if len(res.Tools) != 1 || res.Tools[0].Name != "issue_refund" || res.Tools[0].Description != "Refund an order." ||
		!strings.Contains(string(res.Tools[0].Parameters), "amount") {
		t.Fatalf("search found %+v, want issue_refund with its spec", res.Tools)
	}
	if !strings.Contains(res.Message, "next step") {
		t.Errorf("message %q does not say when the tools are offered", res.Message)
	}
	state = checkpoint(set, pc.State)
	if got, _ := get(t, state, builtin.DeferredKey); !slices.Equal(got, []string{"export_report"}) {
		t.Fatalf("deferred after the search %v, want [export_report]", got)
	}

	next := beforeInference(t, set, state)
	if got, want := toolNames(next.Request.Tools), []string{"lookup_order", "issue_refund", builtin.ToolSearch}; !slices.Equal(got, want) {
		t.Fatalf("next step's tools %v, want %v", got, want)
	}
}

func TestDeferredTools_search_of_every_deferred_tool_removes_tool_search(t *testing.T) {
	set := build(t, builtin.DeferredTools, `{"defer": ["issue_refund", "export_report"]}`)
	state := checkpoint(set, beforeInference(t, set, nil).State)

	res := searchResult(t, gate(t, set, state, builtin.ToolSearch, `{"query": ""}`))
	if got := toolNames(res.Tools); !slices.Equal(got, []string{"export_report", "issue_refund"}) {
		t.Fatalf("empty query found %v, want every deferred tool", got)
	}
	state = checkpoint(set, gate(t, set, state, builtin.ToolSearch, `{"query": ""}`).State)
	next := beforeInference(t, set, state)
	if got := toolNames(next.Request.Tools); !slices.Equal(got, toolNames(agentTools())) {
		t.Fatalf("tools %v, want all the agent's and no tool_search", got)
	}
}

func TestDeferredTools_search_without_a_match_promotes_nothing(t *testing.T) {
	set := build(t, builtin.DeferredTools, `{"defer": ["issue_refund"]}`)
	state := checkpoint(set, beforeInference(t, set, nil).State)

	pc := gate(t, set, state, builtin.ToolSearch, `{"query": "weather forecast"}`)
	res := searchResult(t, pc)
	if len(res.Tools) != 0 || !strings.Contains(res.Message, "issue_refund") {
		t.Fatalf("result %+v, want no tools and a message naming what can be found", res)
	}
	if len(set.PersistentUpdates(pc.Updates)) != 0 {
		t.Fatalf("updates %+v, want none", pc.Updates)
	}
}

func TestDeferredTools_search_with_bad_arguments_fails_the_call(t *testing.T) {
	set := build(t, builtin.DeferredTools, `{"defer": ["issue_refund"]}`)
	pc := gate(t, set, nil, builtin.ToolSearch, `["refund"]`)
	if len(pc.Intercepts) != 1 || !strings.Contains(pc.Intercepts[0].Error, "invalid arguments") {
		t.Fatalf("intercepts %+v, want a set_result error", pc.Intercepts)
	}
}

func TestDeferredTools_gate_leaves_other_tools_alone(t *testing.T) {
	set := build(t, builtin.DeferredTools, `{"defer": ["issue_refund"]}`)
	if pc := gate(t, set, nil, "lookup_order", `{"id": 1}`); len(pc.Intercepts) != 0 {
		t.Fatalf("intercepts %+v, want none", pc.Intercepts)
	}
}

func TestDeferredTools_promote_action_offers_the_tool_again_this_step(t *testing.T) {
	set := build(t, builtin.DeferredTools, `{"defer": ["issue_refund", "export_report"]}`)
	state := checkpoint(set, beforeInference(t, set, nil).State)

	promote := plugin.Action{Key: builtin.PromoteAction, Payload: json.RawMessage(`["issue_refund"]`)}
	pc := beforeInference(t, set, state, promote)
	if got, want := toolNames(pc.Request.Tools), []string{"lookup_order", "issue_refund", builtin.ToolSearch}; !slices.Equal(got, want) {
		t.Fatalf("tools %v, want %v", got, want)
	}
	if got, _ := get(t, pc.State, builtin.DeferredKey); !slices.Equal(got, []string{"export_report"}) {
		t.Fatalf("deferred %v", got)
	}
}

func TestDeferredTools_defer_action_hides_a_tool_and_adds_tool_search(t *testing.T) {
	set := build(t, builtin.DeferredTools, "")
	state := checkpoint(set, beforeInference(t, set, nil).State)

	deferAct := plugin.Action{Key: builtin.DeferAction, Payload: json.RawMessage(`["lookup_order"]`)}
	pc := beforeInference(t, set, state, deferAct)
	if got, want := toolNames(pc.Request.Tools), []string{"issue_refund", "export_report", builtin.ToolSearch}; !slices.Equal(got, want) {
		t.Fatalf("tools %v, want %v", got, want)
	}
	state = checkpoint(set, pc.State)
	if got, want := toolNames(beforeInference(t, set, state).Request.Tools), []string{"issue_refund", "export_report", builtin.ToolSearch}; !slices.Equal(got, want) {
		t.Fatalf("next step's tools %v, want the tool still deferred: %v", got, want)
	}
}

func TestDeferredTools_settings_report_every_problem_at_once(t *testing.T) {
	_, err := builtin.NewDeferredTools(json.RawMessage(`{"defer": ["a", "", "a", "tool_search"]}`))
	if !errors.Is(err, builtin.ErrInvalidSettings) {
		t.Fatalf("error %v, want ErrInvalidSettings", err)
	}
	for _, want := range []string{"defer[1]: empty tool name", `defer[2]: "a" is already listed at [0]`, "defer[3]: tool_search"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

// laterPromoter promotes issue_refund from an action of its own, so the
// promotion runs in a later round than deferred_tools' apply.
type laterPromoter struct{}

func (laterPromoter) Register(r *plugin.Registrar) error {
	r.Hook(pipeline.PhaseBeforeInference, func(_ context.Context, _ *plugin.Context) (plugin.Command, error) {
		var cmd plugin.Command
		return cmd, cmd.Schedule("test.later", nil)
	})
	return r.Action("test.later", pipeline.PhaseBeforeInference, func(_ context.Context, _ *plugin.Context, _ json.RawMessage) (plugin.Command, error) {
		var cmd plugin.Command
		return cmd, cmd.Schedule(builtin.PromoteAction, []string{"issue_refund"})
	})
}

func TestDeferredTools_promotion_in_a_later_round_puts_the_tool_back(t *testing.T) {
	reg := builtin.Registry()
	reg.Add("test", func(json.RawMessage) (plugin.Plugin, error) { return laterPromoter{}, nil })
	set, err := reg.Build(map[string]json.RawMessage{
		builtin.DeferredTools: json.RawMessage(`{"defer": ["issue_refund"]}`),
		"test":                nil,
	})
	if err != nil {
		t.Fatal(err)
	}
	pc := beforeInference(t, set, nil)
	if got, want := toolNames(pc.Request.Tools), []string{"lookup_order", "export_report", "issue_refund"}; !slices.Equal(got, want) {
		t.Fatalf("tools %v, want %v (issue_refund back, no tool_search)", got, want)
	}
}
