// Package tools holds what a tool worker executes: the Tool interface, the
// call it receives, and the built-in tools every `builtin` executor may name —
// echo (returns its arguments), sleep ({"ms"} → {"slept_ms"}), fail
// ({"message"} → a tool error) and pending (parks the call until a decision,
// standing for a long external job; {"result"} completes it).
//
//	t, ok := tools.Builtin("echo")
//	out, err := t.Execute(ctx, tools.Call{Arguments: json.RawMessage(`{"x":1}`)})
//
// A Tool returns its result, or an error that the model is told about (the
// call ends failed). Infrastructure trouble is the worker's business, not the
// tool's.
package tools
