package model

import (
	"context"
	"encoding/json"

	"github.com/stepwise-run/stepwise/pipeline"
)

// Model answers one inference request. Implementations must be safe for
// concurrent use and return promptly when ctx is cancelled.
type Model interface {
	Infer(ctx context.Context, req Request) (Response, error)
}

// ToolSpec is a tool as the model is told about it.
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

// Request is one inference: the run and step it is for, the system prompt,
// the conversation so far and the tools on offer.
type Request struct {
	RunID    string
	Step     int
	System   string
	Messages []pipeline.Message
	Tools    []ToolSpec
	// OnText, when set, receives the answer's text as it streams in, in
	// order, from the goroutine that called Infer. The Response still holds
	// the whole text.
	OnText func(delta string)
	// Override changes the model, temperature or max tokens for this step.
	Override Override
}

// Response is the model's answer: text and any tool calls it proposes.
type Response struct {
	Text      string
	ToolCalls []pipeline.ToolCallRequest
	Usage     pipeline.Usage
	// Batched: the answer came through the provider's Batch API, so its
	// usage costs the model's batch price (config.Price.Batch).
	Batched bool
}

// Override changes the inference parameters of one step (a plugin's
// SetInferenceOverride). Zero fields leave the agent's settings alone.
type Override struct {
	Model       string   `json:"model,omitempty"`
	Temperature *float64 `json:"temperature,omitempty"`
	MaxTokens   *int     `json:"max_tokens,omitempty"`
}

// Merge returns o with the fields set in p taking over.
func (o Override) Merge(p Override) Override {
	if p.Model != "" {
		o.Model = p.Model
	}
	if p.Temperature != nil {
		o.Temperature = p.Temperature
	}
	if p.MaxTokens != nil {
		o.MaxTokens = p.MaxTokens
	}
	return o
}
