package config

import (
	"encoding/json"

	"github.com/stepwise-run/stepwise/pipeline/tools"
)

// Names of the built-in tools, executed in-process by tool workers.
const (
	BuiltinEcho    = "echo"    // returns its arguments
	BuiltinSleep   = "sleep"   // {"ms"}; returns {"slept_ms"}
	BuiltinFail    = "fail"    // {"message"}; returns a tool error
	BuiltinPending = "pending" // parks the call until a decision; {"result"} completes it
)

// Builtins lists the built-in tools, which a builtin executor may name.
func Builtins() []string { return tools.BuiltinNames() }

// builtinTool is the tool added under a built-in's name when the
// configuration defines no tool of that name, so any agent may list it.
func builtinTool(name string) Tool {
	t := Tool{Executor: Executor{Builtin: name}} // queue default, permission allow: by setDefaults
	switch name {
	case BuiltinEcho:
		t.Description = "Returns its arguments unchanged."
		t.Parameters = json.RawMessage(`{"type":"object"}`)
	case BuiltinSleep:
		t.Description = "Waits ms milliseconds, then returns {\"slept_ms\": ms}."
		t.Parameters = json.RawMessage(`{"type":"object","properties":{"ms":{"type":"integer","minimum":0}},"required":["ms"]}`)
	case BuiltinFail:
		t.Description = "Fails with the given message, as a tool error."
		t.Parameters = json.RawMessage(`{"type":"object","properties":{"message":{"type":"string"}}}`)
	case BuiltinPending:
		t.Description = "Starts a long external job: the call waits for a decision. With a \"result\" it returns that result."
		t.Parameters = json.RawMessage(`{"type":"object","properties":{"reason":{"type":"string"},"result":{}}}`)
	}
	return t
}
