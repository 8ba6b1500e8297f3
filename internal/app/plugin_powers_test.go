package app_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/stepwise-run/stepwise/internal/tooling/testinfra"
	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/plugin"
)

// powers is a test plugin that uses the powers the seeds give a plugin
// beyond the probe's: a tool that returns a state command, AfterInference
// edits, stranded actions, RunEnd state, ToolGate re-judging.
type powers struct {
	Edit      *plugin.ToolCallEdit `json:"edit"`
	Drop      *int                 `json:"drop"`
	End       string               `json:"end"`
	Strand    bool                 `json:"strand"`
	CountEnds bool                 `json:"count_ends"`
	Regate    pipeline.GateAction  `json:"regate"` // what ToolGate says of echo once a fact is known
}

var (
	factsKey = plugin.Key[[]string]{Name: "powers.facts", Persistent: true}
	notedKey = plugin.Key[string]{Name: "powers.noted", Persistent: true}
	endsKey  = plugin.Key[int]{Name: "powers.run_ends", Persistent: true}
)

func (p powers) Register(r *plugin.Registrar) error {
	for _, k := range []string{factsKey.Name, notedKey.Name, endsKey.Name} {
		r.StateKey(k, true)
	}
	r.Hook(pipeline.PhaseBeforeInference, func(context.Context, *plugin.Context) (plugin.Command, error) {
		var cmd plugin.Command
		if !p.Strand {
			return cmd, nil
		}
		return cmd, cmd.Schedule("powers.note", nil) // an after_tool_execute action: the tool worker's
	})
	r.Hook(pipeline.PhaseAfterInference, func(context.Context, *plugin.Context) (plugin.Command, error) {
		var cmd plugin.Command
		var errs []error
		if p.Edit != nil {
			errs = append(errs, cmd.Schedule(plugin.EditToolCall, p.Edit))
		}
		if p.Drop != nil {
			errs = append(errs, cmd.Schedule(plugin.DropToolCall, *p.Drop))
		}
		if p.End != "" {
			errs = append(errs, cmd.Schedule(plugin.RequestTermination, p.End))
		}
		return cmd, errors.Join(errs...)
	})
	r.Hook(pipeline.PhaseToolGate, func(_ context.Context, pc *plugin.Context) (plugin.Command, error) {
		var cmd plugin.Command
		facts, _, err := factsKey.Get(pc.State)
		if p.Regate == "" || pc.Call.Tool != "echo" || len(facts) == 0 || err != nil {
			return cmd, err
		}
		return cmd, cmd.Schedule(plugin.ToolIntercept, plugin.Intercept{Intercept: pipeline.Intercept{
			Action: p.Regate, Reason: "echo is known", Result: json.RawMessage(fmt.Sprintf(`{"known":%q}`, facts[0]))}})
	})
	r.Hook(pipeline.PhaseRunEnd, func(_ context.Context, pc *plugin.Context) (plugin.Command, error) {
		var cmd plugin.Command
		if !p.CountEnds {
			return cmd, nil
		}
		n, _, err := endsKey.Get(pc.State)
		if err != nil {
			return cmd, err
		}
		return cmd, endsKey.Set(&cmd, n+1)
	})
	note := func(_ context.Context, pc *plugin.Context, _ json.RawMessage) (plugin.Command, error) {
		var cmd plugin.Command
		return cmd, notedKey.Set(&cmd, pc.Call.ID)
	}
	remember := func(_ context.Context, pc *plugin.Context, args json.RawMessage) (plugin.ToolOutput, error) {
		var in struct {
			Fact string `json:"fact"`
		}
		if err := json.Unmarshal(args, &in); err != nil {
			return plugin.ToolOutput{}, err
		}
		facts, _, err := factsKey.Get(pc.State)
		if err != nil {
			return plugin.ToolOutput{}, err
		}
		var cmd plugin.Command
		err = errors.Join(factsKey.Set(&cmd, append(facts, in.Fact)),
			cmd.Schedule("powers.note", nil), // runs at AfterToolExecute, in this worker
			cmd.Schedule(plugin.AddContextMessage, plugin.ContextMessage{Content: "too late"})) // the step worker's: fails
		if err != nil {
			return plugin.ToolOutput{}, err
		}
		return plugin.WithCommand(map[string]string{"remembered": in.Fact}, cmd)
	}
	return errors.Join(r.Action("powers.note", pipeline.PhaseAfterToolExecute, note), r.Tool("remember", remember))
}

func newPowers(raw json.RawMessage) (plugin.Plugin, error) {
	var p powers
	if len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &p); err != nil {
			return nil, err
		}
	}
	return p, nil
}

const rememberTool = `
tools:
  remember:
    description: remember a fact
    parameters: {type: object, properties: {fact: {type: string}}, required: [fact]}
    executor: {plugin: powers}
`

// failedEvents are the action.failed events of a run, decoded.
func failedEvents(t *testing.T, events []pipeline.Event) []pipeline.FailedAction {
	t.Helper()
	var out []pipeline.FailedAction
	for _, e := range eventsOf(events, pipeline.EventActionFailed) {
		var f pipeline.FailedAction
		if err := json.Unmarshal(e.Data, &f); err != nil {
			t.Fatalf("action.failed %s: %v", e.Data, err)
		}
		out = append(out, f)
	}
	return out
}

func TestPlugins_a_tool_commits_its_state_command_with_its_result(t *testing.T) {
	stack, base := pluginStack(t, rememberTool+`
agents:
  remembering: {model: {provider: script, turns: [{text: hi}]}, tools: [remember], plugins: {powers: {}}}
`, nil)
	id := createRun(t, base, "r-remember", "remembering", script(call("R", "remember", `{"fact":"the sky is blue"}`)))
	v := waitDone(t, base, id, 30*time.Second)
	assertNaturalEnd(t, v, 1)
	if c := callOf(v, "R"); c.Status != "succeeded" || canonical(t, c.Result) != canonical(t, map[string]any{"remembered": "the sky is blue"}) {
		t.Errorf("the tool's result: %+v", c)
	}
	state := getState(t, base, id)
	if got := string(state[factsKey.Name]); got != `["the sky is blue"]` {
		t.Errorf("the tool's state update was not committed: %s = %s", factsKey.Name, got)
	}
	if got := string(state[notedKey.Name]); got != `"R"` {
		t.Errorf("the tool's after_tool_execute action did not run: %s = %s", notedKey.Name, got)
	}
	failed := failedEvents(t, runEvents(t, stack, id))
	if len(failed) != 1 || failed[0].Key != plugin.AddContextMessage || failed[0].Phase != pipeline.PhaseBeforeInference ||
		!strings.Contains(failed[0].Error, "runs in the step worker") {
		t.Errorf("the tool's before_inference action is not recorded as failed where it could not run: %+v", failed)
	}
}

func TestPlugins_an_action_aimed_at_another_process_is_recorded_as_failed(t *testing.T) {
	stack, base := pluginStack(t, `
agents:
  stranding: {model: {provider: script, turns: [{text: hi}]}, tools: [echo], plugins: {powers: {strand: true}}}
`, nil)
	id := createRun(t, base, "r-strand", "stranding", `{"provider":"script","turns":[{"text":"done"}]}`)
	assertNaturalEnd(t, waitDone(t, base, id, 30*time.Second), 0)
	failed := failedEvents(t, runEvents(t, stack, id))
	if len(failed) != 1 || failed[0].Key != "powers.note" || !strings.Contains(failed[0].Error, "runs in the tool worker") {
		t.Fatalf("action.failed events: %+v", failed)
	}
	if f := string(getState(t, base, id)[plugin.FailedActionsKey.Name]); !strings.Contains(f, "powers.note") {
		t.Errorf("the failed action is not in the run's failed actions: %s", f)
	}
}

func TestPlugins_after_inference_edits_drops_and_ends(t *testing.T) {
	stack, base := pluginStack(t, `
agents:
  editing: {model: {provider: script, turns: [{text: hi}]}, tools: [echo], plugins: {powers: {edit: {index: 0, arguments: {"n": 10}}, drop: 1}}}
  ending:  {model: {provider: script, turns: [{text: hi}]}, tools: [echo], plugins: {powers: {end: "the answer is enough"}}}
`, nil)
	two := script(call("A", "echo", `{"n":1}`), call("B", "echo", `{"n":2}`))

	v := waitDone(t, base, createRun(t, base, "r-edit", "editing", two), 30*time.Second)
	assertNaturalEnd(t, v, 1)
	if len(v.ToolCalls) != 1 {
		t.Fatalf("the dropped call was made: %+v", v.ToolCalls)
	}
	if c := callOf(v, "A"); canonical(t, c.Result) != canonical(t, map[string]any{"n": 10}) {
		t.Errorf("the edited call ran with %s", c.Result)
	}

	v = waitDone(t, base, createRun(t, base, "r-end", "ending", two), 30*time.Second)
	if v.Termination.Reason != pipeline.ReasonBehaviorRequested || v.Termination.Detail != "the answer is enough" {
		t.Errorf("termination: %+v", v.Termination)
	}
	if len(v.ToolCalls) != 0 || len(eventsOf(runEvents(t, stack, "r-end"), pipeline.EventToolCallCreated)) != 0 {
		t.Errorf("a run ended at after_inference made calls: %+v", v.ToolCalls)
	}
	if msgs := getMessages(t, base, "r-end"); len(msgs) == 0 || msgs[len(msgs)-1].Content != "working" {
		t.Errorf("the step's answer is not kept: %+v", msgs)
	}
}

func TestPlugins_run_end_runs_once_and_keeps_its_state(t *testing.T) {
	_, base := pluginStack(t, `
agents:
  ending: {model: {provider: script, turns: [{text: hi}]}, tools: [echo], plugins: {powers: {count_ends: true}}}
`, func(p message.Publisher) message.Publisher { return testinfra.Duplicating{Publisher: p} })
	id := createRun(t, base, "r-run-end", "ending", threeSteps)
	assertNaturalEnd(t, waitDone(t, base, id, 30*time.Second), 2)
	waitState(t, base, id, plugin.RunEndKey.Name)
	if n := string(getState(t, base, id)[endsKey.Name]); n != "1" {
		t.Fatalf("RunEnd's counter is %q, want 1", n)
	}
}

func TestPlugins_tool_gate_judges_a_sequential_call_again_after_the_calls_before_it(t *testing.T) {
	_, base := pluginStack(t, rememberTool+`
agents:
  answering: {model: {provider: script, turns: [{text: hi}]}, tools: [remember, echo], tool_execution: sequential, plugins: {powers: {regate: set_result}}}
  blocking:  {model: {provider: script, turns: [{text: hi}]}, tools: [remember, echo], tool_execution: sequential, plugins: {powers: {regate: block}}}
  parallel:  {model: {provider: script, turns: [{text: hi}]}, tools: [remember, echo], plugins: {powers: {regate: set_result}}}
`, nil)
	calls := script(call("R", "remember", `{"fact":"echo is known"}`), call("E", "echo", `{"n":1}`), call("F", "echo", `{"n":2}`))

	v := waitDone(t, base, createRun(t, base, "r-regate", "answering", calls), 30*time.Second)
	assertNaturalEnd(t, v, 1)
	if c := callOf(v, "E"); c.Status != "succeeded" || canonical(t, c.Result) != canonical(t, map[string]any{"known": "echo is known"}) {
		t.Errorf("the second call was not judged again after the first committed its state: %+v", c)
	}

	v = waitDone(t, base, createRun(t, base, "r-regate-block", "blocking", calls), 30*time.Second)
	if v.Termination.Reason != pipeline.ReasonBlocked || v.Termination.Detail != "echo is known" {
		t.Errorf("termination: %+v", v.Termination)
	}
	if e, f := callOf(v, "E"), callOf(v, "F"); e.Status != "failed" || f.Status != "cancelled" || !strings.Contains(f.Error, "blocked at call E") {
		t.Errorf("a block on judging again: E %+v, F %+v", e, f)
	}

	v = waitDone(t, base, createRun(t, base, "r-regate-parallel", "parallel", calls), 30*time.Second)
	assertNaturalEnd(t, v, 1)
	if c := callOf(v, "E"); canonical(t, c.Result) != canonical(t, map[string]any{"n": 1}) {
		t.Errorf("a parallel step's call was judged again: %+v", c)
	}
}

// waitState waits until the run's plugin state has key.
func waitState(t *testing.T, base, id, key string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, ok := getState(t, base, id)[key]; ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s: state key %s never set", id, key)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
