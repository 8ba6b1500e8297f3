package stop_test

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/config"
	"github.com/stepwise-run/stepwise/pipeline/stop"
)

func ExampleConditions_Evaluate() {
	conds, err := stop.Compile(config.Stop{
		MaxRounds:     20,
		Timeout:       config.D(10 * time.Minute),
		StopOnTool:    []string{"finish"},
		LoopDetection: 3,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("history:", conds.NeedsHistory())

	// The run's tool-call records, as the store returns them.
	// The model searched three times for the same thing, keys in any order.
	var runCalls []pipeline.ToolCall
	for step, args := range []string{`{"q":"go","page":1}`, `{"page":1,"q":"go"}`, `{ "q": "go", "page": 1 }`} {
		runCalls = append(runCalls, pipeline.ToolCall{
			Step: step, Tool: "search", Arguments: json.RawMessage(args), Status: pipeline.CallSucceeded,
		})
	}
	started := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	steps := stop.History(runCalls, 2, conds.NeedsHistory())
	steps[len(steps)-1].AssistantText = "Let me search again."
	t := conds.Evaluate(stop.State{Step: 2, StartedAt: started, Now: started.Add(time.Minute), Steps: steps})
	fmt.Println(t.Reason, t.Code)
	fmt.Println(t.Detail)
	// Output:
	// history: 3
	// stopped loop_detection
	// the same call search {"page":1,"q":"go"} was made in 3 consecutive steps
}
