// Package model is how a step worker asks a language model what to do next:
// the Model interface, the request it gets (system prompt, conversation,
// offered tools) and the response it gives (text, tool calls, token usage).
//
// Providers live in sub-packages; script (deterministic, for demos and tests)
// is the first.
//
//	m, err := script.Parse(raw)
//	resp, err := m.Infer(ctx, model.Request{Step: 0, Messages: msgs})
package model
