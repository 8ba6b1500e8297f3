// Package schema validates tool arguments against a tool's JSON Schema, with
// messages a model can act on.
//
// Compile a tool's parameters once, when the worker starts, and validate each
// call's arguments before executing it:
//
//	s, err := schema.Compile(tool.Parameters) // empty: any object
//	if err != nil { ... }                     // the schema itself is broken
//	if err := s.Validate(call.Arguments); err != nil {
//		// err.Error(): `/amount: got string, want number; missing property "currency"`
//	}
//
// Validate reports every problem at once, sorted by where in the arguments it
// is, so a model can fix all of them in one go. The arguments must be a JSON
// object whatever the schema says. Schemas without "$schema" are read as
// draft 2020-12 (what MCP servers publish); "$schema" picks another draft.
// A schema may refer to itself ("$ref": "#/$defs/…"); it never loads anything
// from a file or the network.
package schema
