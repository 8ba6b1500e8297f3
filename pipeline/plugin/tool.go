package plugin

import (
	"context"
	"encoding/json"
	"fmt"
)

// Tool executes the calls of a tool whose executor is this plugin
// (`executor: {plugin: NAME}`), in the tool worker, between
// BeforeToolExecute and AfterToolExecute. pc is the call's Context (Call,
// State); args are the call's arguments. It returns the result and,
// optionally, a Command (seed 001's ToolOutput::with_command): its state
// updates are committed with the result, atomically, and its actions run
// like a hook's — those for AfterToolExecute in that phase, any other is
// recorded as failed (Set.Strand). An error fails the call (tools.Pending
// parks it). ctx ends at the tool's timeout or when the
// worker stops.
type Tool func(ctx context.Context, pc *Context, args json.RawMessage) (ToolOutput, error)

// ToolOutput is what a plugin's tool returns: the call's result (JSON) and
// a Command committed with it.
type ToolOutput struct {
	Result  json.RawMessage
	Command Command
}

// WithCommand returns the output of result (any JSON-encodable value) with
// cmd: the seeds' ToolOutput::with_command.
func WithCommand(result any, cmd Command) (ToolOutput, error) {
	b, err := json.Marshal(result)
	if err != nil {
		return ToolOutput{}, fmt.Errorf("tool result: %w", err)
	}
	return ToolOutput{Result: b, Command: cmd}, nil
}

// Tool registers t as the executor of the tool name, for the agents that
// enable this plugin and declare the tool with `executor: {plugin: <this
// plugin>}`. Registering a name twice is an error.
func (r *Registrar) Tool(name string, t Tool) error {
	if _, dup := r.tools[name]; dup {
		return fmt.Errorf("tool %s is registered twice", name)
	}
	r.tools[name] = t
	return nil
}
