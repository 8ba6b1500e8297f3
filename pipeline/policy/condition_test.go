package policy_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stepwise-run/stepwise/pipeline/policy"
)

func TestCondition(t *testing.T) {
	cases := []struct {
		expr, args string
		want       bool
		wantErr    string
	}{
		{"args.amount > 100", `{"amount": 250}`, true, ""},
		{"args.amount > 100", `{"amount": 99.5}`, false, ""},
		{`args.currency == "EUR" && args.amount > 10`, `{"currency":"EUR","amount":11}`, true, ""},
		{`"to" in args && args.to.endsWith("@example.com")`, `{"to":"a@example.com"}`, true, ""},
		{`"to" in args`, `{}`, false, ""},
		{"args.amount > 100", `{}`, false, "no such key"},
		{"args.amount", `{"amount": 5}`, false, "want a bool"},
	}
	for _, c := range cases {
		t.Run(c.expr+" on "+c.args, func(t *testing.T) {
			cond, err := policy.Compile(c.expr)
			if err != nil {
				t.Fatal(err)
			}
			got, err := cond.Eval(json.RawMessage(c.args))
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error = %v, want one saying %q", err, c.wantErr)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("Eval = %v, %v; want %v", got, err, c.want)
			}
		})
	}
}

func TestCompile_refuses_bad_expressions(t *testing.T) {
	for _, expr := range []string{"args.amount >", `"text"`, "1 + 1", "nope > 1"} {
		if _, err := policy.Compile(expr); err == nil {
			t.Errorf("Compile(%q) succeeded", expr)
		}
	}
}
