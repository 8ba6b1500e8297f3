package config_test

import (
	"fmt"

	"github.com/stepwise-run/stepwise/pipeline/config"
)

func ExampleParse() {
	cfg, err := config.Parse([]byte(`
agents:
  support:
    model: {provider: script, turns: [{text: "hello"}]}
    tools: [refund, echo]
    tool_execution: sequential
tools:
  refund:
    executor: {builtin: echo}
    queue: payments
    permission: ask
    approval_timeout: 30m
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	agent, _ := cfg.Agent("support")
	refund, _ := cfg.Tool("refund")
	echo, _ := cfg.Tool("echo") // built-in, added implicitly
	fmt.Println(agent.Model.Provider, agent.Sequential())
	fmt.Println(refund.Permission, refund.ResumeMode, refund.OnTimeout, refund.ApprovalTimeout)
	fmt.Println(echo.Executor.Kind(), echo.Queue)
	fmt.Println(cfg.Queues(), cfg.Kafka.Names().ToolCalls("payments"))
	// Output:
	// script true
	// ask replay cancel 30m0s
	// builtin default
	// [default payments] stepwise.tool-calls.payments
}

func ExampleConfig_Validate() {
	_, err := config.Parse([]byte(`
agents:
  a:
    model: {provider: openai}
    tools: [echo, lookup, search]
tools:
  lookup:
    executor: {builtin: grep}
    permission: maybe
`))
	fmt.Println(err)
	// Output:
	// agents.a.model.name: required for provider "openai"
	// agents.a.tools[2]: unknown tool "search"
	// tools.lookup.executor.builtin: unknown builtin "grep"; want one of echo, fail, pending, sleep
	// tools.lookup.permission: "maybe"; want one of allow, deny, ask
}
