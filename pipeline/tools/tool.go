package tools

import (
	"context"
	"encoding/json"
)

// Call is one execution of a tool: which call, which attempt, and the
// arguments (already in the form the resume mode chose). CallID is stable
// across attempts, so executors use it as an idempotency key.
type Call struct {
	RunID     string
	CallID    string
	Step      int
	Attempt   int
	Tool      string
	Arguments json.RawMessage
}

// Tool executes calls. Implementations must be safe for concurrent use and
// return promptly when ctx is cancelled (its deadline is the tool timeout).
type Tool interface {
	Execute(ctx context.Context, call Call) (json.RawMessage, error)
}

// Func adapts a function to Tool.
type Func func(ctx context.Context, call Call) (json.RawMessage, error)

// Execute calls f.
func (f Func) Execute(ctx context.Context, call Call) (json.RawMessage, error) { return f(ctx, call) }
