package plugin_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/model"
	"github.com/stepwise-run/stepwise/pipeline/plugin"
)

// fake is a plugin made of a register function.
type fake func(r *plugin.Registrar) error

func (f fake) Register(r *plugin.Registrar) error { return f(r) }

func build(t *testing.T, plugins map[string]fake) *plugin.Set {
	t.Helper()
	reg := plugin.NewRegistry()
	enabled := map[string]json.RawMessage{}
	for name, p := range plugins {
		reg.Add(name, func(json.RawMessage) (plugin.Plugin, error) { return p, nil })
		enabled[name] = nil
	}
	set, err := reg.Build(enabled)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

var counter = plugin.Key[int]{Name: "test.counter", Persistent: true}

func TestRun_hooks_update_state_and_actions_converge(t *testing.T) {
	set := build(t, map[string]fake{"p": func(r *plugin.Registrar) error {
		r.StateKey(counter.Name, true)
		r.Hook(pipeline.PhaseBeforeInference, func(_ context.Context, pc *plugin.Context) (plugin.Command, error) {
			var cmd plugin.Command
			n, _, _ := counter.Get(pc.State)
			if err := counter.Set(&cmd, n+1); err != nil {
				return cmd, err
			}
			return cmd, cmd.Schedule("p.countdown", 3)
		})
		return r.Action("p.countdown", pipeline.PhaseBeforeInference, func(_ context.Context, pc *plugin.Context, raw json.RawMessage) (plugin.Command, error) {
			var n int
			_ = json.Unmarshal(raw, &n)
			var cmd plugin.Command
			if n == 0 {
				return cmd, cmd.Schedule(plugin.AddContextMessage, plugin.ContextMessage{Content: "counted down"})
			}
			return cmd, cmd.Schedule("p.countdown", n-1)
		})
	}})
	pc := &plugin.Context{Phase: pipeline.PhaseBeforeInference, State: plugin.State{counter.Name: json.RawMessage(`41`)},
		Request: &plugin.Request{Tools: []model.ToolSpec{{Name: "a"}, {Name: "b"}}}}
	if _, err := set.Run(context.Background(), pc, nil); err != nil {
		t.Fatal(err)
	}
	if n, _, _ := counter.Get(pc.State); n != 42 {
		t.Fatalf("counter = %d", n)
	}
	if len(pc.Request.Messages) != 1 || pc.Request.Messages[0].Content != "counted down" || pc.Request.Messages[0].Role != pipeline.RoleSystem {
		t.Fatalf("request messages %+v", pc.Request.Messages)
	}
	if ups := set.PersistentUpdates(pc.Updates); len(ups) != 1 || ups[0].Key != counter.Name {
		t.Fatalf("persistent updates %+v", ups)
	}
}

func TestRun_an_endless_cascade_fails_the_phase_after_16_rounds(t *testing.T) {
	set := build(t, map[string]fake{"loop": func(r *plugin.Registrar) error {
		r.Hook(pipeline.PhaseStepStart, func(context.Context, *plugin.Context) (plugin.Command, error) {
			var cmd plugin.Command
			return cmd, cmd.Schedule("loop.again", nil)
		})
		return r.Action("loop.again", pipeline.PhaseStepStart, func(context.Context, *plugin.Context, json.RawMessage) (plugin.Command, error) {
			var cmd plugin.Command
			return cmd, cmd.Schedule("loop.again", nil)
		})
	}})
	_, err := set.Run(context.Background(), &plugin.Context{Phase: pipeline.PhaseStepStart}, nil)
	if !errors.Is(err, plugin.ErrPhaseRunLoopExceeded) || !strings.Contains(err.Error(), "after 16 rounds") {
		t.Fatalf("error = %v", err)
	}
}

func TestRun_a_failing_handler_is_recorded_not_retried_and_the_phase_goes_on(t *testing.T) {
	calls := 0
	set := build(t, map[string]fake{"f": func(r *plugin.Registrar) error {
		r.Hook(pipeline.PhaseStepStart, func(context.Context, *plugin.Context) (plugin.Command, error) {
			var cmd plugin.Command
			_ = cmd.Schedule("f.boom", nil)
			return cmd, cmd.Schedule("nobody.handles.this", nil)
		})
		return r.Action("f.boom", pipeline.PhaseStepStart, func(context.Context, *plugin.Context, json.RawMessage) (plugin.Command, error) {
			calls++
			return plugin.Command{}, errors.New("boom")
		})
	}})
	pc := &plugin.Context{Phase: pipeline.PhaseStepStart}
	if _, err := set.Run(context.Background(), pc, nil); err != nil {
		t.Fatal(err)
	}
	failed, _, _ := plugin.FailedActionsKey.Get(pc.State)
	if calls != 1 || len(failed) != 2 || failed[0].Key != "f.boom" || failed[0].Error != "boom" || failed[1].Key != "nobody.handles.this" {
		t.Fatalf("calls %d, failed %+v", calls, failed)
	}
	if !set.Persistent(plugin.FailedActionsKey.Name) {
		t.Fatal("failed actions must be checkpointed")
	}
}

func TestRun_actions_for_a_later_phase_wait_for_it(t *testing.T) {
	set := build(t, map[string]fake{"p": func(r *plugin.Registrar) error {
		r.Hook(pipeline.PhaseStepStart, func(context.Context, *plugin.Context) (plugin.Command, error) {
			var cmd plugin.Command
			return cmd, cmd.Schedule(plugin.ExcludeTool, "b")
		})
		return nil
	}})
	pc := &plugin.Context{Phase: pipeline.PhaseStepStart}
	later, err := set.Run(context.Background(), pc, nil)
	if err != nil || len(later) != 1 {
		t.Fatalf("later %v, %v", later, err)
	}
	pc.Phase = pipeline.PhaseBeforeInference
	pc.Request = &plugin.Request{Tools: []model.ToolSpec{{Name: "a"}, {Name: "b"}}}
	if later, err = set.Run(context.Background(), pc, later); err != nil || len(later) != 0 {
		t.Fatalf("later %v, %v", later, err)
	}
	if len(pc.Request.Tools) != 1 || pc.Request.Tools[0].Name != "a" {
		t.Fatalf("tools %+v", pc.Request.Tools)
	}
}

func TestBuiltinActions_shape_the_request_and_the_gate(t *testing.T) {
	var set *plugin.Set // no plugins: the runtime's actions only
	temp := 0.2
	pc := &plugin.Context{Phase: pipeline.PhaseBeforeInference,
		Request: &plugin.Request{Tools: []model.ToolSpec{{Name: "a"}, {Name: "b"}, {Name: "c"}}}}
	acts := []plugin.Action{
		{Key: plugin.IncludeOnlyTools, Payload: json.RawMessage(`["a","b"]`)},
		{Key: plugin.SetInferenceOverride, Payload: json.RawMessage(`{"model":"small","temperature":0.2}`)},
		{Key: plugin.SkipInference, Payload: json.RawMessage(`"nothing to do"`)},
	}
	if _, err := set.Run(context.Background(), pc, acts); err != nil {
		t.Fatal(err)
	}
	if len(pc.Request.Tools) != 2 || pc.Request.Override.Model != "small" || *pc.Request.Override.Temperature != temp || pc.Skip != "nothing to do" {
		t.Fatalf("request %+v, skip %q", pc.Request, pc.Skip)
	}
	call := pipeline.ToolCall{ID: "c1", Tool: "pay"}
	gate := &plugin.Context{Phase: pipeline.PhaseToolGate, Call: &call}
	if _, err := set.Run(context.Background(), gate, []plugin.Action{
		{Key: plugin.ToolIntercept, Payload: json.RawMessage(`{"action":"block","reason":"no","tool":"pay"}`)},
		{Key: plugin.ToolIntercept, Payload: json.RawMessage(`{"action":"suspend","tool":"other"}`)},
	}); err != nil {
		t.Fatal(err)
	}
	if len(gate.Intercepts) != 1 || gate.Intercepts[0].Action != pipeline.GateBlock {
		t.Fatalf("intercepts %+v", gate.Intercepts)
	}
}

func TestBuild_refuses_a_plugin_not_in_the_build(t *testing.T) {
	_, err := plugin.NewRegistry().Build(map[string]json.RawMessage{"nope": nil})
	if err == nil || !strings.Contains(err.Error(), `plugin "nope" is not in this build`) {
		t.Fatalf("error = %v", err)
	}
}
