package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stepwise-run/stepwise/pipeline/tools"
)

func run(t *testing.T, ctx context.Context, name, args string) (string, error) {
	t.Helper()
	tool, ok := tools.Builtin(name)
	if !ok {
		t.Fatalf("no builtin %q", name)
	}
	out, err := tool.Execute(ctx, tools.Call{Tool: name, Arguments: json.RawMessage(args)})
	return string(out), err
}

func TestBuiltins(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name, tool, args, want, wantErr string
	}{
		{"echo returns its arguments", "echo", `{"a":[1,2]}`, `{"a":[1,2]}`, ""},
		{"sleep reports what it slept", "sleep", `{"ms":1}`, `{"slept_ms":1}`, ""},
		{"sleep without ms is a tool error", "sleep", `{}`, "", `sleep wants {"ms": <milliseconds>}`},
		{"sleep refuses negative ms", "sleep", `{"ms":-5}`, "", "sleep: ms must be between 0 and 3600000"},
		{"fail fails with the message", "fail", `{"message":"boom"}`, "", "boom"},
		{"fail fails without a message too", "fail", `{}`, "", "the fail tool failed, as it always does"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := run(t, ctx, c.tool, c.args)
			if c.wantErr != "" {
				if err == nil || err.Error() != c.wantErr {
					t.Fatalf("error = %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("got %s, %v; want %s", got, err, c.want)
			}
		})
	}
}

func TestBuiltins_sleep_returns_when_cancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := run(t, ctx, "sleep", `{"ms":3600000}`); !errors.Is(err, context.Canceled) {
		t.Fatalf("error = %v, want context.Canceled", err)
	}
}

func TestBuiltinNames_lists_them_all(t *testing.T) {
	got := tools.BuiltinNames()
	if len(got) != 4 || got[0] != "echo" || got[1] != "fail" || got[2] != "pending" || got[3] != "sleep" {
		t.Fatalf("BuiltinNames = %v", got)
	}
}
