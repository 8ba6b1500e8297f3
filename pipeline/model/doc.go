// Package model is how a step worker asks a language model what to do next:
// the Model interface, the request it gets (system prompt, conversation,
// offered tools) and the response it gives (text, tool calls, token usage).
//
// Providers live in sub-packages: openai (any OpenAI-compatible Chat
// Completions endpoint), script (deterministic turns, for demos and tests)
// and synthetic (configurable latency and tool calls, for benchmarks).
// Package providers builds the one a configuration names.
//
//	m, err := providers.New(agent.Model)
//	resp, err := m.Infer(ctx, model.Request{Step: 0, Messages: msgs})
package model
