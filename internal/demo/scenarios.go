package demo

import (
	"encoding/json"
	"fmt"

	"github.com/stepwise-run/stepwise/pipeline"
)

// scenario is one kind of demo run: the script its model follows and what
// the run must look like when it is done.
type scenario struct {
	name      string
	script    string
	steps     int                       // steps the run takes
	messages  int                       // messages in the conversation at the end
	callState []pipeline.ToolCallStatus // the final status of each call, in order
}

var scenarios = []scenario{
	{
		name: "research (3 steps, 2 parallel calls each)",
		script: `{"provider":"script","turns":[
			{"text":"Looking up the order and the customer.","tool_calls":[
				{"name":"echo","arguments":{"order":"A-1"}},{"name":"echo","arguments":{"customer":"c-9"}}]},
			{"text":"Checking the warehouse.","tool_calls":[
				{"name":"sleep","arguments":{"ms":20}},{"name":"echo","arguments":{"warehouse":"north"}}]},
			{"text":"The order ships tomorrow."}]}`,
		steps: 3, messages: 1 + 3 + 4,
		callState: []pipeline.ToolCallStatus{"succeeded", "succeeded", "succeeded", "succeeded"},
	},
	{
		name: "flaky (a failing tool, then recovery)",
		script: `{"provider":"script","turns":[
			{"text":"Trying the payment service.","tool_calls":[
				{"name":"fail","arguments":{"message":"payment service unavailable"}},{"name":"echo","arguments":{"fallback":true}}]},
			{"text":"The payment service is down; I used the fallback."}]}`,
		steps: 2, messages: 1 + 2 + 2,
		callState: []pipeline.ToolCallStatus{"failed", "succeeded"},
	},
	{
		name: "refund (waits for approval; the approver resumes it)",
		script: `{"provider":"script","turns":[
			{"text":"Refunding the order.","tool_calls":[{"name":"refund","arguments":{"order":"A-7","amount":250}}]},
			{"text":"The refund of 250 went through."}]}`,
		steps: 2, messages: 1 + 2 + 1,
		callState: []pipeline.ToolCallStatus{"succeeded"},
	},
	{
		name: "refund over the limit (the approver cancels it)",
		script: `{"provider":"script","turns":[
			{"text":"Refunding the order.","tool_calls":[{"name":"refund","arguments":{"order":"B-9","amount":5000}}]},
			{"text":"The refund was refused; I will tell the customer."}]}`,
		steps: 2, messages: 1 + 2 + 1,
		callState: []pipeline.ToolCallStatus{"cancelled"},
	},
	{
		name:   "direct (answers at once)",
		script: `{"provider":"script","turns":[{"text":"Hello! Nothing to look up."}]}`,
		steps:  1, messages: 2,
		callState: nil,
	},
}

// request is the POST /v1/runs body of run i.
func request(i int) (map[string]any, scenario) {
	sc := scenarios[i%len(scenarios)]
	return map[string]any{
		"run_id": fmt.Sprintf("demo-%04d", i),
		"agent":  "assistant",
		"input":  fmt.Sprintf("Demo request %d: %s", i, sc.name),
		"model":  json.RawMessage(sc.script),
	}, sc
}
