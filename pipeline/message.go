package pipeline

import (
	"encoding/json"
	"math"
)

// Role is who speaks in a message.
type Role string

// The four message roles.
const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Message is one entry of a run's conversation. Assistant messages may carry
// the tool calls the model proposed; tool messages answer one of them by id.
type Message struct {
	Role       Role              `json:"role"`
	Content    string            `json:"content"`
	ToolCalls  []ToolCallRequest `json:"tool_calls,omitempty"`
	ToolCallID string            `json:"tool_call_id,omitempty"`
}

// ToolCallRequest is a tool call as the model proposed it.
type ToolCallRequest struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// Usage counts the tokens a run has spent and, when its model has a price
// (budgets.prices), their cost in USD.
type Usage struct {
	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
	CostUSD      float64 `json:"cost_usd,omitempty"`
}

// Add returns the sum of u and o.
func (u Usage) Add(o Usage) Usage {
	return Usage{InputTokens: u.InputTokens + o.InputTokens, OutputTokens: u.OutputTokens + o.OutputTokens,
		CostUSD: USD(MicroUSD(u.CostUSD) + MicroUSD(o.CostUSD))}
}

// MicroUSD converts USD to millionths of a USD, rounded: costs are counted
// in them, as integers, so that sums are exact.
func MicroUSD(usd float64) int64 { return int64(math.Round(usd * 1e6)) }

// USD converts millionths of a USD to USD.
func USD(micro int64) float64 { return float64(micro) / 1e6 }

// Total is input plus output tokens.
func (u Usage) Total() int64 { return u.InputTokens + u.OutputTokens }
