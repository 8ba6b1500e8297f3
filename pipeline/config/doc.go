// Package config reads the one YAML file every stepwise program shares: the
// agents (model, system prompt, tools, stop conditions), the tools (executor,
// queue, permission and approval settings), the MCP servers, the topic
// prefix and the worker settings. Every key is described in
// docs/configuration.md.
//
// The file is YAML 1.2: only true and false are booleans, so y, n, yes, no,
// on and off are strings, as keys (a schema's property "y") and as values.
//
// Parsing is strict: YAML is turned into JSON and checked field by field, so
// an unknown or misspelled key, a value of the wrong kind or a duplicate key
// is an error naming its path. Defaults are then applied and the whole file
// validated; every problem is reported at once, one per line:
//
//	agents.assistant.tools[1]: unknown tool "x"
//	tools.refund.permission: "maybe"; want one of allow, deny, ask
//
// The built-in tools (echo, sleep, fail, pending; see Builtins) exist in
// every configuration (an agent may list them without defining them)
// unless the file defines tools of those names.
//
// Usage:
//
//	cfg, err := config.Load("stepwise.yaml") // or config.Parse(data), config.Default()
//	if err != nil {
//		return err // errors.Is(err, config.ErrInvalid) for a bad file
//	}
//	agent, ok := cfg.Agent("assistant")
//	tool, ok := cfg.Tool("echo")
//	names := cfg.Kafka.Names()   // topic names under the configured prefix
//	for _, q := range cfg.Queues() {
//		topic := names.ToolCalls(q)
//	}
//
// Broker and Redis addresses are not part of the file; programs take them
// from --kafka / --redis or STEPWISE_KAFKA_BROKERS / STEPWISE_REDIS_URL.
package config
