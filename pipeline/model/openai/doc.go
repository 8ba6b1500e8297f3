// Package openai is the model provider for any OpenAI-compatible Chat
// Completions endpoint (OpenAI itself, Azure-style gateways, vLLM, Ollama,
// LiteLLM, …), built on the official OpenAI Go SDK.
//
// Configuration (one agent's model; the shared fields are read by package
// config, the rest here from the object as written):
//
//	model:
//	  provider: openai
//	  name: gpt-4o-mini                 # required
//	  base_url: http://127.0.0.1:8000/v1  # optional; default the SDK's, https://api.openai.com/v1/
//	  api_key_env: OPENAI_API_KEY       # required; the key is read from this variable only
//	  temperature: 0.2                  # optional; unset leaves the endpoint's default
//	  max_tokens: 1024                  # optional; sent as max_tokens
//	  timeout: 60s                      # optional; per attempt (a stream: the whole stream)
//	  max_retries: 3                    # optional; retries on 408, 409, 429, 5xx
//	  stream: true                      # optional; stream the answer (OnText per delta)
//
// Use:
//
//	m, err := openai.New(agent.Model, openai.WithLogger(log))
//	resp, err := m.Infer(ctx, model.Request{System: sys, Messages: msgs, Tools: tools,
//		OnText: func(delta string) { /* forward to the run's event stream */ }})
//
// The system prompt and the conversation map to Chat Completions messages
// (assistant messages with tool_calls, tool messages with tool_call_id);
// tools are offered as functions with their JSON Schemas (none: an empty
// object schema). The answer's first choice becomes the Response: text, tool
// calls in order (parallel calls too) and token usage. A refusal, a
// content-filter stop, a body that is no completion and an HTTP error status
// are returned as errors (see errors.go); the step worker ends the run with
// them. Retries with exponential backoff and Retry-After are the SDK's.
package openai
