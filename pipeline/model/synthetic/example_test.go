package synthetic_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/stepwise-run/stepwise/pipeline/model"
	"github.com/stepwise-run/stepwise/pipeline/model/synthetic"
)

func Example() {
	m, err := synthetic.Parse(json.RawMessage(`{"provider": "synthetic", "tool_calls_per_step": 2, "tool": "sleep",
		"arguments": {"ms": 1}, "steps": 1, "input_tokens": 100, "output_tokens": 20, "seed": 7}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	for step := range 2 {
		resp, _ := m.Infer(context.Background(), model.Request{RunID: "r-1", Step: step})
		fmt.Printf("step %d: %q, %d calls, %d+%d tokens\n", step, resp.Text, len(resp.ToolCalls), resp.Usage.InputTokens, resp.Usage.OutputTokens)
		for _, c := range resp.ToolCalls {
			fmt.Printf("  %s %s %s\n", c.ID, c.Name, c.Arguments)
		}
	}
	// Output:
	// step 0: "Step 0: calling sleep 2 times.", 2 calls, 100+20 tokens
	//   syn_0_0 sleep {"ms":1}
	//   syn_0_1 sleep {"ms":1}
	// step 1: "Done at step 1.", 0 calls, 100+20 tokens
}
