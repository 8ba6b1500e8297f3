package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"
)

// MaxSleep bounds the sleep tool, so a typo cannot park a worker slot for days.
const MaxSleep = time.Hour

var builtins = map[string]Tool{
	"echo":    Func(echo),
	"sleep":   Func(sleep),
	"fail":    Func(fail),
	"pending": Func(pending),
}

// Builtin returns the built-in tool of that name.
func Builtin(name string) (Tool, bool) {
	t, ok := builtins[name]
	return t, ok
}

// BuiltinNames lists the built-in tools, sorted.
func BuiltinNames() []string {
	names := make([]string, 0, len(builtins))
	for n := range builtins {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func echo(_ context.Context, call Call) (json.RawMessage, error) {
	if len(call.Arguments) == 0 {
		return json.RawMessage(`{}`), nil
	}
	return call.Arguments, nil
}

func sleep(ctx context.Context, call Call) (json.RawMessage, error) {
	var args struct {
		MS *int64 `json:"ms"`
	}
	if err := json.Unmarshal(call.Arguments, &args); err != nil || args.MS == nil {
		return nil, errors.New(`sleep wants {"ms": <milliseconds>}`)
	}
	d := time.Duration(*args.MS) * time.Millisecond
	if d < 0 || d > MaxSleep {
		return nil, fmt.Errorf("sleep: ms must be between 0 and %d", MaxSleep.Milliseconds())
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-t.C:
	}
	return json.Marshal(map[string]int64{"slept_ms": *args.MS})
}

func fail(_ context.Context, call Call) (json.RawMessage, error) {
	var args struct {
		Message string `json:"message"`
	}
	_ = json.Unmarshal(call.Arguments, &args) // any arguments make the tool fail
	if args.Message == "" {
		args.Message = "the fail tool failed, as it always does"
	}
	return nil, errors.New(args.Message)
}

// pending stands for a long external job: it returns pending (the call
// parks until a decision) unless its arguments carry a "result", which it
// returns. Resumed with pass_decision_to_tool and a payload {"result": …},
// or with use_decision_as_result, the call completes.
func pending(_ context.Context, call Call) (json.RawMessage, error) {
	var args struct {
		Result json.RawMessage `json:"result"`
		Reason string          `json:"reason"`
	}
	_ = json.Unmarshal(call.Arguments, &args)
	if len(args.Result) > 0 {
		return args.Result, nil
	}
	if args.Reason == "" {
		args.Reason = "waiting for an external job"
	}
	return nil, Pending(args.Reason)
}
