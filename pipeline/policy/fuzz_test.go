package policy_test

import (
	"encoding/json"
	"testing"

	"github.com/stepwise-run/stepwise/pipeline/policy"
)

// FuzzCondition: whatever an ask_when expression and a call's arguments,
// Compile and Eval never panic; an expression that compiles evaluates to a
// bool or an error, never anything else.
func FuzzCondition(f *testing.F) {
	for _, seed := range [][2]string{
		{"args.amount > 100", `{"amount":500}`},
		{`args.to.endsWith("@example.com")`, `{"to":"a@example.com"}`},
		{"has(args.x) && args.x == 1", `{}`},
		{"args.amount > ", `{"amount":1}`},
		{"1 / 0 == 1", `{}`},
		{"args", `[]`},
	} {
		f.Add(seed[0], []byte(seed[1]))
	}
	f.Fuzz(func(t *testing.T, expr string, args []byte) {
		c, err := policy.Compile(expr)
		if err != nil {
			return
		}
		if !json.Valid(args) {
			return // arguments are checked as JSON long before a condition sees them
		}
		_, _ = c.Eval(args)
	})
}
