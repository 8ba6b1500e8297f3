// Package policy evaluates a tool's permission condition (`ask_when` in the
// configuration): a CEL expression over the call's arguments, bound as
// `args`, that must yield a bool.
//
//	c, err := policy.Compile("args.amount > 100")
//	ask, err := c.Eval(json.RawMessage(`{"amount": 250}`)) // true
package policy
