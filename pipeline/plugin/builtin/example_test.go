package builtin_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/model"
	"github.com/stepwise-run/stepwise/pipeline/plugin"
	"github.com/stepwise-run/stepwise/pipeline/plugin/builtin"
)

// An agent's plugins, built from its configuration and run at
// BeforeInference the way the step worker does.
func ExampleRegistry() {
	set, err := builtin.Registry().Build(map[string]json.RawMessage{
		"reminder":       json.RawMessage(`{"message": "Answer in English."}`),
		"deferred_tools": json.RawMessage(`{"defer": ["issue_refund"]}`),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	pc := &plugin.Context{
		Phase: pipeline.PhaseBeforeInference,
		Run:   pipeline.Run{ID: "r-1", Step: 0},
		Request: &plugin.Request{Tools: []model.ToolSpec{
			{Name: "lookup_order"}, {Name: "issue_refund", Description: "Refund an order."},
		}},
	}
	if _, err := set.Run(context.Background(), pc, nil); err != nil {
		fmt.Println(err)
		return
	}
	for _, t := range pc.Request.Tools {
		fmt.Println("tool:", t.Name)
	}
	for _, m := range pc.Request.Messages {
		fmt.Printf("%s: %s\n", m.Role, m.Content)
	}
	for _, u := range set.PersistentUpdates(pc.Updates) {
		fmt.Printf("state %s = %s\n", u.Key, u.Value)
	}
	// Output:
	// tool: lookup_order
	// tool: tool_search
	// system: Answer in English.
	// state deferred_tools.deferred = ["issue_refund"]
	// state deferred_tools.catalog = {"issue_refund":{"name":"issue_refund","description":"Refund an order."}}
}
