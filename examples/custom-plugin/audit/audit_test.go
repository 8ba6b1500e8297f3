package audit_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	customplugin "github.com/stepwise-run/stepwise/examples/custom-plugin"
	"github.com/stepwise-run/stepwise/examples/custom-plugin/audit"
	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/plugin"
)

func build(t *testing.T, settings string) *plugin.Set {
	t.Helper()
	set, err := customplugin.Registry().Build(map[string]json.RawMessage{audit.Name: json.RawMessage(settings)})
	if err != nil {
		t.Fatal(err)
	}
	return set
}

func runPhase(t *testing.T, set *plugin.Set, pc *plugin.Context) {
	t.Helper()
	if _, err := set.Run(context.Background(), pc, nil); err != nil {
		t.Fatal(err)
	}
	if len(pc.Failed) > 0 {
		t.Fatalf("failed actions %+v", pc.Failed)
	}
}

func TestAudit_blocks_a_tool_its_settings_name(t *testing.T) {
	set := build(t, `{"block": ["delete_account"], "reason": "ask a person"}`)
	for tool, want := range map[string]bool{"delete_account": true, "lookup_order": false} {
		pc := &plugin.Context{Phase: pipeline.PhaseToolGate, Call: &pipeline.ToolCall{ID: "c-1", Tool: tool}}
		runPhase(t, set, pc)
		blocked := len(pc.Intercepts) == 1 && pc.Intercepts[0].Action == pipeline.GateBlock && pc.Intercepts[0].Reason == "ask a person"
		if blocked != want || (!want && len(pc.Intercepts) > 0) {
			t.Errorf("%s: intercepts %+v, want blocked: %v", tool, pc.Intercepts, want)
		}
	}
}

func TestAudit_counts_calls_per_tool_across_steps_in_a_persistent_key(t *testing.T) {
	set := build(t, `null`)
	if !set.Persistent(audit.CallsKey.Name) {
		t.Fatalf("%s is not persistent", audit.CallsKey.Name)
	}
	state := plugin.State{}
	for _, calls := range [][]string{{"lookup_order", "echo"}, {"lookup_order"}} {
		pc := &plugin.Context{Phase: pipeline.PhaseStepEnd, State: state}
		for i, tool := range calls {
			pc.Calls = append(pc.Calls, pipeline.ToolCall{ID: string(rune('a' + i)), Tool: tool, Status: pipeline.CallSucceeded})
		}
		runPhase(t, set, pc)
		state = pc.State
	}
	got, _, err := audit.CallsKey.Get(state)
	if err != nil {
		t.Fatal(err)
	}
	if got["lookup_order"] != 2 || got["echo"] != 1 || len(got) != 2 {
		t.Fatalf("counts %v, want lookup_order 2, echo 1", got)
	}
}

func TestAudit_settings_report_every_problem_at_once(t *testing.T) {
	_, err := audit.New(json.RawMessage(`{"block": ["", "x", "x"]}`))
	if err == nil || !strings.Contains(err.Error(), "block[0]: empty tool name") || !strings.Contains(err.Error(), `block[2]: "x" is already listed at [1]`) {
		t.Fatalf("error %v", err)
	}
}
