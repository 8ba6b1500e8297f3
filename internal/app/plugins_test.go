package app_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/stepwise-run/stepwise/internal/app"
	"github.com/stepwise-run/stepwise/internal/tooling/testinfra"
	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/model"
	"github.com/stepwise-run/stepwise/pipeline/plugin"
)

// probe is a test plugin whose settings pick what it does.
type probe struct {
	Context     string            `json:"context"`
	Exclude     string            `json:"exclude"`
	IncludeOnly []string          `json:"include_only"`
	Override    *model.Override   `json:"override"`
	Intercept   *plugin.Intercept `json:"intercept"`
	Skip        bool              `json:"skip"`
	Loop        bool              `json:"loop"`
	Failing     bool              `json:"failing"`
	Count       bool              `json:"count"`
}

var stepsSeen = plugin.Key[int]{Name: "probe.steps", Persistent: true}

func (p probe) Register(r *plugin.Registrar) error {
	r.StateKey(stepsSeen.Name, true)
	r.Hook(pipeline.PhaseBeforeInference, func(context.Context, *plugin.Context) (plugin.Command, error) {
		var cmd plugin.Command
		var errs []error
		if p.Context != "" {
			errs = append(errs, cmd.Schedule(plugin.AddContextMessage, plugin.ContextMessage{Content: p.Context}))
		}
		if p.Exclude != "" {
			errs = append(errs, cmd.Schedule(plugin.ExcludeTool, p.Exclude))
		}
		if p.IncludeOnly != nil {
			errs = append(errs, cmd.Schedule(plugin.IncludeOnlyTools, p.IncludeOnly))
		}
		if p.Override != nil {
			errs = append(errs, cmd.Schedule(plugin.SetInferenceOverride, p.Override))
		}
		if p.Skip {
			errs = append(errs, cmd.Schedule(plugin.SkipInference, "the probe had nothing to ask"))
		}
		if p.Loop {
			errs = append(errs, cmd.Schedule("probe.again", nil))
		}
		if p.Failing {
			errs = append(errs, cmd.Schedule("probe.fail", nil))
		}
		return cmd, errors.Join(errs...)
	})
	r.Hook(pipeline.PhaseToolGate, func(context.Context, *plugin.Context) (plugin.Command, error) {
		var cmd plugin.Command
		if p.Intercept == nil {
			return cmd, nil
		}
		return cmd, cmd.Schedule(plugin.ToolIntercept, p.Intercept)
	})
	r.Hook(pipeline.PhaseStepEnd, func(_ context.Context, pc *plugin.Context) (plugin.Command, error) {
		var cmd plugin.Command
		if !p.Count {
			return cmd, nil
		}
		n, _, err := stepsSeen.Get(pc.State)
		if err != nil {
			return cmd, err
		}
		return cmd, stepsSeen.Set(&cmd, n+1)
	})
	again := func(context.Context, *plugin.Context, json.RawMessage) (plugin.Command, error) {
		var cmd plugin.Command
		return cmd, cmd.Schedule("probe.again", nil)
	}
	fail := func(context.Context, *plugin.Context, json.RawMessage) (plugin.Command, error) {
		return plugin.Command{}, errors.New("the probe's handler broke")
	}
	return errors.Join(r.Action("probe.again", pipeline.PhaseBeforeInference, again),
		r.Action("probe.fail", pipeline.PhaseBeforeInference, fail))
}

func probeRegistry() *plugin.Registry {
	reg := plugin.NewRegistry()
	reg.Add("probe", func(raw json.RawMessage) (plugin.Plugin, error) {
		var p probe
		if len(raw) > 0 && string(raw) != "null" {
			if err := json.Unmarshal(raw, &p); err != nil {
				return nil, err
			}
		}
		return p, nil
	})
	reg.Add("powers", newPowers)
	return reg
}

// pluginStack runs a stack whose agents come from agentsYAML, with the
// probe plugin available; wrap, when set, wraps its publisher.
func pluginStack(t *testing.T, agentsYAML string, wrap func(message.Publisher) message.Publisher) (*app.Stack, string) {
	t.Helper()
	return pluginStackOf(t, probeRegistry(), agentsYAML, wrap)
}

// pluginStackOf is pluginStack with the plugins of reg.
func pluginStackOf(t *testing.T, reg *plugin.Registry, agentsYAML string, wrap func(message.Publisher) message.Publisher) (*app.Stack, string) {
	t.Helper()
	cfg := parseConfig(t, `
kafka: {partitions: 4}
stepworker: {lease: 1s, sweep_interval: 100ms, dispatch_timeout: 3s}
toolworker: {lease: 1s}
`+agentsYAML)
	in := newInfra(t)
	o := in.options(cfg)
	o.Plugins = reg
	stack, err := app.Connect(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stack.Close() })
	if wrap != nil {
		stack.Publisher = wrap(stack.Publisher)
	}
	workers(t, stack)
	return stack, serve(t, stack)
}

type runWithState struct {
	runView
	State map[string]json.RawMessage `json:"state"`
}

func getState(t *testing.T, base, id string) map[string]json.RawMessage {
	t.Helper()
	var v runWithState
	httpDo(t, http.MethodGet, base+"/v1/runs/"+id, nil, &v)
	return v.State
}

func TestPlugins_request_actions_shape_what_the_model_is_asked(t *testing.T) {
	t.Setenv("STEPWISE_TEST_OPENAI_KEY", "test-key")
	srv := &chatServer{}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	_, base := pluginStack(t, fmt.Sprintf(`
agents:
  shaped:
    model: {provider: openai, name: big, base_url: %q, api_key_env: STEPWISE_TEST_OPENAI_KEY, stream: false}
    tools: [echo, sleep, fail]
    plugins:
      probe: {context: "Remember the customer is a VIP.", exclude: sleep, override: {model: small, temperature: 0.5, max_tokens: 77}}
  narrowed:
    model: {provider: openai, name: big, base_url: %q, api_key_env: STEPWISE_TEST_OPENAI_KEY, stream: false}
    tools: [echo, sleep, fail]
    plugins: {probe: {include_only: [echo]}}
`, hs.URL+"/v1", hs.URL+"/v1"), nil)

	httpDo(t, http.MethodPost, base+"/v1/runs", map[string]any{"run_id": "r-shaped", "agent": "shaped", "input": "hi"}, nil)
	assertNaturalEnd(t, waitDone(t, base, "r-shaped", 30*time.Second), 1)
	srv.mu.Lock()
	first := srv.bodies[0]
	srv.mu.Unlock()
	msgs := fmt.Sprint(first["messages"])
	tools := fmt.Sprint(first["tools"])
	if first["model"] != "small" || first["temperature"] != 0.5 || first["max_tokens"] != float64(77) {
		t.Errorf("override not applied: model %v temperature %v max_tokens %v", first["model"], first["temperature"], first["max_tokens"])
	}
	if !strings.Contains(msgs, "Remember the customer is a VIP.") {
		t.Errorf("context message missing: %s", msgs)
	}
	if strings.Contains(tools, "sleep") || !strings.Contains(tools, "echo") || !strings.Contains(tools, "fail") {
		t.Errorf("exclude_tool: tools %s", tools)
	}
	if got := getMessages(t, base, "r-shaped"); strings.Contains(fmt.Sprint(got), "VIP") {
		t.Errorf("a context message leaked into the run's history: %v", got)
	}

	httpDo(t, http.MethodPost, base+"/v1/runs", map[string]any{"run_id": "r-narrowed", "agent": "narrowed", "input": "hi"}, nil)
	assertNaturalEnd(t, waitDone(t, base, "r-narrowed", 30*time.Second), 1)
	srv.mu.Lock()
	last := srv.bodies[len(srv.bodies)-1]
	srv.mu.Unlock()
	if tools := fmt.Sprint(last["tools"]); strings.Contains(tools, "sleep") || strings.Contains(tools, "fail") || !strings.Contains(tools, "echo") {
		t.Errorf("include_only_tools: tools %s", tools)
	}
}

func TestPlugins_tool_intercepts_skip_loop_limit_and_failed_actions(t *testing.T) {
	stack, base := pluginStack(t, `
agents:
  set_result: {model: {provider: script, turns: [{text: hi}]}, tools: [echo], plugins: {probe: {intercept: {action: set_result, tool: echo, result: {"from": "plugin"}}}}}
  blocked:    {model: {provider: script, turns: [{text: hi}]}, tools: [echo], plugins: {probe: {intercept: {action: block, reason: "echo is off today"}}}}
  suspended:  {model: {provider: script, turns: [{text: hi}]}, tools: [echo], plugins: {probe: {intercept: {action: suspend, reason: "a human looks first"}}}}
  skipped:    {model: {provider: script, turns: [{text: hi}]}, tools: [echo], plugins: {probe: {skip: true}}}
  looping:    {model: {provider: script, turns: [{text: hi}]}, tools: [echo], plugins: {probe: {loop: true}}}
  failing:    {model: {provider: script, turns: [{text: hi}]}, tools: [echo], plugins: {probe: {failing: true}}}
`, nil)
	echo := script(call("E", "echo", `{"n":1}`))

	v := waitDone(t, base, createRun(t, base, "r-set-result", "set_result", echo), 30*time.Second)
	if c := callOf(v, "E"); c.Status != "succeeded" || canonical(t, c.Result) != canonical(t, map[string]any{"from": "plugin"}) {
		t.Errorf("set_result: %+v", c)
	}
	for _, e := range eventsOf(runEvents(t, stack, "r-set-result"), pipeline.EventToolCallStarted) {
		t.Errorf("an intercepted call was executed: %s", e.CallID)
	}
	v = waitDone(t, base, createRun(t, base, "r-blocked", "blocked", echo), 30*time.Second)
	if v.Termination.Reason != pipeline.ReasonBlocked || !strings.Contains(v.Termination.Detail, "echo is off today") {
		t.Errorf("block: %+v", v.Termination)
	}
	id := createRun(t, base, "r-suspended", "suspended", echo)
	v = waitFor(t, base, id, "suspended by a plugin", func(v runView) bool { return v.Status == pipeline.RunWaiting })
	if c := callOf(v, "E"); c.Status != "suspended" {
		t.Errorf("suspend: %+v", c)
	}
	v = waitDone(t, base, createRun(t, base, "r-skipped", "skipped", echo), 30*time.Second)
	if v.Termination.Reason != pipeline.ReasonBehaviorRequested || !strings.Contains(v.Termination.Detail, "nothing to ask") {
		t.Errorf("skip: %+v", v.Termination)
	}
	v = waitDone(t, base, createRun(t, base, "r-looping", "looping", echo), 30*time.Second)
	if v.Termination.Reason != pipeline.ReasonError || !strings.Contains(v.Termination.Detail, "phase run loop exceeded") {
		t.Errorf("loop limit: %+v", v.Termination)
	}
	assertNaturalEnd(t, waitDone(t, base, createRun(t, base, "r-failing", "failing", echo), 30*time.Second), 1)
	state := getState(t, base, "r-failing")
	if f := string(state["runtime.failed_actions"]); !strings.Contains(f, "probe.fail") || !strings.Contains(f, "the probe's handler broke") {
		t.Errorf("failed actions not recorded in the run's state: %v", state)
	}
}

const countingAgent = `
agents:
  counted:
    model: {provider: script, turns: [{text: hi}]}
    tools: [echo, sleep]
    plugins: {probe: {count: true}}
`

func TestPlugins_persistent_state_survives_a_step_worker_restart(t *testing.T) {
	cfg := parseConfig(t, "kafka: {partitions: 4}\nstepworker: {lease: 1s, sweep_interval: 100ms, dispatch_timeout: 3s}\ntoolworker: {lease: 1s}\n"+countingAgent)
	in := newInfra(t)
	opts := in.options(cfg)
	opts.Plugins = probeRegistry()
	stack, err := app.Connect(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stack.Close() })
	stopSteps := start(t, stack.RunStepWorker)
	start(t, func(ctx context.Context) error { return stack.RunToolWorker(ctx, nil) })
	base := serve(t, stack)

	id := createRun(t, base, "r-counted", "counted", `{"provider":"script","turns":[
		{"text":"one","tool_calls":[{"name":"echo","arguments":{}}]},
		{"text":"two","tool_calls":[{"name":"sleep","arguments":{"ms":1500}}]},
		{"text":"three"}]}`)
	waitFor(t, base, id, "step 1's sleep running", func(v runView) bool {
		return v.Step == 1 && len(v.ToolCalls) == 2 && v.ToolCalls[1].Status == "running"
	})
	if n := string(getState(t, base, id)[stepsSeen.Name]); n != "1" {
		t.Fatalf("after step 0 the counter is %q", n)
	}
	stopSteps()
	start(t, stack.RunStepWorker) // a new step worker: all it knows is in Redis
	assertNaturalEnd(t, waitDone(t, base, id, 30*time.Second), 2)
	if n := string(getState(t, base, id)[stepsSeen.Name]); n != "3" {
		t.Fatalf("the counter is %q after 3 steps, want 3", n)
	}
}

func TestPlugins_a_step_delivered_twice_changes_plugin_state_once(t *testing.T) {
	_, base := pluginStack(t, countingAgent, func(p message.Publisher) message.Publisher { return testinfra.Duplicating{Publisher: p} })
	id := createRun(t, base, "r-counted-twice", "counted", threeSteps)
	assertNaturalEnd(t, waitDone(t, base, id, 30*time.Second), 2)
	if n := string(getState(t, base, id)[stepsSeen.Name]); n != "3" {
		t.Fatalf("the counter is %q after 3 steps delivered twice, want 3", n)
	}
}
