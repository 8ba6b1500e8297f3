package plugin_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/model"
	"github.com/stepwise-run/stepwise/pipeline/plugin"
)

// The plugin code of these examples is docs/plugins.md's, word for word
// (TestPluginsDoc_examples_are_the_example_tests_code).

var (
	Facts = plugin.Key[[]string]{Name: "memory.facts", Persistent: true}
	Kept  = plugin.Key[int]{Name: "memory.kept", Persistent: true}
)

type memory struct{}

func (m memory) Register(r *plugin.Registrar) error {
	r.StateKey(Facts.Name, Facts.Persistent)
	r.StateKey(Kept.Name, Kept.Persistent)
	r.Hook(pipeline.PhaseToolGate, m.gate)
	r.Hook(pipeline.PhaseRunEnd, m.end)
	return r.Tool("remember", m.remember)
}

// remember executes the tool remember: its result, and a command that
// adds the fact to the run's state, committed with the result.
func (memory) remember(ctx context.Context, pc *plugin.Context, args json.RawMessage) (plugin.ToolOutput, error) {
	var in struct {
		Fact string `json:"fact"`
	}
	if err := json.Unmarshal(args, &in); err != nil {
		return plugin.ToolOutput{}, err
	}
	facts, _, err := Facts.Get(pc.State)
	if err != nil {
		return plugin.ToolOutput{}, err
	}
	var cmd plugin.Command
	if err := Facts.Set(&cmd, append(facts, in.Fact)); err != nil {
		return plugin.ToolOutput{}, err
	}
	return plugin.WithCommand(map[string]int{"remembered": len(facts) + 1}, cmd)
}

// gate answers recall from the state once a fact is known; until then it
// allows it, so that, in a sequential step, a recall after a remember is
// judged again once the remember has committed its fact.
func (memory) gate(ctx context.Context, pc *plugin.Context) (plugin.Command, error) {
	var cmd plugin.Command
	if pc.Call.Tool != "recall" {
		return cmd, nil
	}
	facts, _, err := Facts.Get(pc.State)
	if err != nil || len(facts) == 0 {
		return cmd, err
	}
	result, err := json.Marshal(map[string][]string{"facts": facts})
	if err != nil {
		return cmd, err
	}
	return cmd, cmd.Schedule(plugin.ToolIntercept, plugin.Intercept{
		Intercept: pipeline.Intercept{Action: pipeline.GateSetResult, Result: result},
	})
}

// end keeps how many facts the run ended with: RunEnd runs once per run,
// and its updates are committed.
func (memory) end(ctx context.Context, pc *plugin.Context) (plugin.Command, error) {
	var cmd plugin.Command
	facts, _, err := Facts.Get(pc.State)
	if err != nil {
		return cmd, err
	}
	return cmd, Kept.Set(&cmd, len(facts))
}

type tidy struct{}

func (tidy) Register(r *plugin.Registrar) error {
	r.Hook(pipeline.PhaseAfterInference, func(ctx context.Context, pc *plugin.Context) (plugin.Command, error) {
		var cmd plugin.Command
		seen := map[string]bool{}
		for i, c := range pc.Response.ToolCalls {
			var err error
			switch key := c.Name + string(c.Arguments); {
			case c.Name == "delete_account": // the run ends; none of the calls is made
				err := cmd.Schedule(plugin.RequestTermination, "accounts are closed by a person")
				return cmd, err
			case seen[key]: // the same call twice: once is enough
				err = cmd.Schedule(plugin.DropToolCall, i)
			case c.Name == "refund":
				err = cmd.Schedule(plugin.EditToolCall, plugin.ToolCallEdit{Index: i, Arguments: json.RawMessage(`{"dry_run":true}`)})
			}
			if err != nil {
				return cmd, err
			}
			seen[c.Name+string(c.Arguments)] = true
		}
		return cmd, nil
	})
	return nil
}

type late struct{}

func (late) Register(r *plugin.Registrar) error {
	r.Hook(pipeline.PhaseStepEnd, func(ctx context.Context, pc *plugin.Context) (plugin.Command, error) {
		var cmd plugin.Command
		// Wrong: before_inference has run for this step, and an action does
		// not carry over to the next. Recorded as failed (action.failed).
		return cmd, cmd.Schedule(plugin.AddContextMessage, plugin.ContextMessage{Content: "Be brief."})
	})
	return nil
}

// setOf registers p as the only plugin of an agent.
func setOf(p plugin.Plugin) *plugin.Set {
	reg := plugin.NewRegistry()
	reg.Add("p", func(json.RawMessage) (plugin.Plugin, error) { return p, nil })
	set, err := reg.Build(map[string]json.RawMessage{"p": nil})
	if err != nil {
		panic(err)
	}
	return set
}

func Example_toolWithCommand() {
	set := setOf(memory{})
	remember, _ := set.Tool("remember")
	pc := &plugin.Context{Phase: pipeline.PhaseBeforeToolExecute, State: plugin.State{}}
	out, err := remember(context.Background(), pc, json.RawMessage(`{"fact":"the sky is blue"}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	set.Apply(pc, out.Command) // as the tool worker does, before FinishCall commits both
	fmt.Println(string(out.Result), string(pc.State[Facts.Name]))
	// Output: {"remembered":1} ["the sky is blue"]
}

func Example_afterInference() {
	set := setOf(tidy{})
	calls := func(names ...string) *model.Response {
		r := &model.Response{}
		for _, n := range names {
			r.ToolCalls = append(r.ToolCalls, pipeline.ToolCallRequest{Name: n, Arguments: json.RawMessage(`{}`)})
		}
		return r
	}
	pc := &plugin.Context{Phase: pipeline.PhaseAfterInference, Response: calls("search", "search", "refund")}
	if _, err := set.Run(context.Background(), pc, nil); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("drop", pc.Drop, "refund with", string(pc.Response.ToolCalls[2].Arguments))
	pc = &plugin.Context{Phase: pipeline.PhaseAfterInference, Response: calls("search", "delete_account")}
	if _, err := set.Run(context.Background(), pc, nil); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("end:", pc.End)
	// Output:
	// drop [1] refund with {"dry_run":true}
	// end: accounts are closed by a person
}

func Example_toolGate() {
	set := setOf(memory{})
	pc := &plugin.Context{Phase: pipeline.PhaseToolGate, Call: &pipeline.ToolCall{ID: "c2", Tool: "recall"},
		State: plugin.State{Facts.Name: json.RawMessage(`["the sky is blue"]`)}}
	if _, err := set.Run(context.Background(), pc, nil); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(pc.Intercepts[0].Action, string(pc.Intercepts[0].Result))
	// Output: set_result {"facts":["the sky is blue"]}
}

func Example_strandedAction() {
	set := setOf(late{})
	pc := &plugin.Context{Phase: pipeline.PhaseStepEnd}
	later, err := set.Run(context.Background(), pc, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	set.Strand(pc, later) // as the step worker does when its phases are over
	fmt.Println(pc.Failed[0].Key+":", pc.Failed[0].Error)
	// Output: runtime.add_context_message: aimed at phase before_inference, which does not come again in this phase run: an action does not carry over to a later step or call
}

func Example_runEnd() {
	set := setOf(memory{})
	pc := &plugin.Context{Phase: pipeline.PhaseRunEnd, State: plugin.State{Facts.Name: json.RawMessage(`["a","b"]`)}}
	if _, err := set.Run(context.Background(), pc, nil); err != nil {
		fmt.Println(err)
		return
	}
	for _, u := range set.PersistentUpdates(pc.Updates) {
		fmt.Println(u.Key, string(u.Value))
	}
	// Output: memory.kept 2
}
