package app_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stepwise-run/stepwise/pipeline"
)

// stopConfig has one agent per stop condition.
const stopConfig = `
kafka: {partitions: 4}
stepworker: {lease: 2s, sweep_interval: 100ms, dispatch_timeout: 3s}
toolworker: {lease: 2s}
agents:
  rounds:      {model: {provider: script, turns: [{text: hi}]}, tools: [echo], stop: {max_rounds: 2}}
  timeout:     {model: {provider: script, turns: [{text: hi}]}, tools: [sleep], stop: {timeout: 1s}}
  budget:      {model: {provider: script, turns: [{text: hi}]}, tools: [echo], stop: {token_budget: 250}}
  errors:      {model: {provider: script, turns: [{text: hi}]}, tools: [fail], stop: {consecutive_errors: 2}}
  on_tool:     {model: {provider: script, turns: [{text: hi}]}, tools: [echo, finish], stop: {stop_on_tool: [finish]}}
  content:     {model: {provider: script, turns: [{text: hi}]}, tools: [echo], stop: {content_match: "(?i)all done"}}
  loops:       {model: {provider: script, turns: [{text: hi}]}, tools: [echo], stop: {loop_detection: 3}}
tools:
  finish: {executor: {builtin: echo}}
`

// forever calls the tool with the same arguments at every step.
func forever(text, tool, args, usage string) string {
	if usage != "" {
		usage = `,"usage":` + usage
	}
	return fmt.Sprintf(`{"provider":"script","loop_last":true,"turns":[{"text":%q,"tool_calls":[{"name":%q,"arguments":%s}]%s}]}`, text, tool, args, usage)
}

func TestStop_each_condition_ends_the_run_stopped_with_its_code_and_detail(t *testing.T) {
	_, base := func() (any, string) {
		stack := connect(t, newInfra(t), parseConfig(t, stopConfig))
		workers(t, stack)
		return stack, serve(t, stack)
	}()
	cases := []struct {
		agent, script string
		code, detail  string
		step          int // the step it stops at; -1: do not check
	}{
		{"rounds", forever("again", "echo", `{"n":1}`, ""), "max_rounds", "2 of 2 rounds", 1},
		{"timeout", forever("wait", "sleep", `{"ms":400}`, ""), "timeout", "limit 1s", -1},
		{"budget", forever("spend", "echo", `{"n":1}`, `{"input_tokens":100,"output_tokens":50}`), "token_budget", "used 300 of 250 tokens", 1},
		{"errors", forever("try", "fail", `{"message":"nope"}`, ""), "consecutive_errors", "2 steps in a row", 1},
		{"on_tool", forever("finishing", "finish", `{}`, ""), "stop_on_tool", "the model called finish", 0},
		{"content", forever("All done, thanks", "echo", `{"n":1}`, ""), "content_match", "(?i)all done", 0},
		{"loops", `{"provider":"script","loop_last":true,"turns":[{"text":"a","tool_calls":[{"name":"echo","arguments":{"x":1,"y":2}}]},{"text":"b","tool_calls":[{"name":"echo","arguments":{"y":2,"x":1}}]}]}`,
			"loop_detection", "3 consecutive steps", 2},
	}
	for _, c := range cases {
		t.Run(c.agent, func(t *testing.T) {
			id := createRun(t, base, "r-stop-"+c.agent, c.agent, c.script)
			v := waitDone(t, base, id, 30*time.Second)
			tm := v.Termination
			if tm.Reason != pipeline.ReasonStopped || tm.Code != c.code || !strings.Contains(tm.Detail, c.detail) {
				t.Fatalf("termination %+v, want stopped/%s saying %q", tm, c.code, c.detail)
			}
			if c.step >= 0 && v.Step != c.step {
				t.Fatalf("stopped at step %d, want %d", v.Step, c.step)
			}
		})
	}
}
