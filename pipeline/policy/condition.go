package policy

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/google/cel-go/cel"
)

// Condition is a compiled CEL expression over `args`. It is immutable and
// safe for concurrent use.
type Condition struct {
	expr string
	prg  cel.Program
}

// Compile parses and type-checks expr. Its result must be a bool.
func Compile(expr string) (*Condition, error) {
	env, err := cel.NewEnv(cel.Variable("args", cel.MapType(cel.StringType, cel.DynType)))
	if err != nil {
		return nil, fmt.Errorf("condition %q: %w", expr, err)
	}
	ast, iss := env.Compile(expr)
	if iss.Err() != nil {
		return nil, fmt.Errorf("condition %q: %w", expr, iss.Err())
	}
	if ast.OutputType() != cel.BoolType && ast.OutputType() != cel.DynType {
		return nil, fmt.Errorf("condition %q yields %s, want bool", expr, ast.OutputType())
	}
	prg, err := env.Program(ast)
	if err != nil {
		return nil, fmt.Errorf("condition %q: %w", expr, err)
	}
	return &Condition{expr: expr, prg: prg}, nil
}

// String returns the expression as written.
func (c *Condition) String() string { return c.expr }

// Eval evaluates the condition on a call's arguments (a JSON object). An
// error (say, a missing field) is returned as such: the caller decides what
// an undecidable condition means.
func (c *Condition) Eval(args json.RawMessage) (bool, error) {
	vars := map[string]any{}
	if len(bytes.TrimSpace(args)) > 0 {
		if err := json.Unmarshal(args, &vars); err != nil {
			return false, fmt.Errorf("condition %q: arguments are not a JSON object: %w", c.expr, err)
		}
	}
	out, _, err := c.prg.Eval(map[string]any{"args": vars})
	if err != nil {
		return false, fmt.Errorf("condition %q: %w", c.expr, err)
	}
	b, ok := out.Value().(bool)
	if !ok {
		return false, fmt.Errorf("condition %q yielded %v, want a bool", c.expr, out.Value())
	}
	return b, nil
}
