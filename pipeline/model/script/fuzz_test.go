package script_test

import (
	"context"
	"testing"

	"github.com/stepwise-run/stepwise/pipeline/model"
	"github.com/stepwise-run/stepwise/pipeline/model/script"
)

// FuzzParse: whatever a run brings as its script model, Parse never panics,
// and a script it accepts answers every step without panicking.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		`{"provider":"script","turns":[{"text":"hi"}]}`,
		`{"provider":"script","turns":[{"text":"a","tool_calls":[{"id":"c1","name":"echo","arguments":{"x":1}}],"usage":{"input_tokens":3}}],"loop_last":true}`,
		`{"provider":"script","turns":[{"delay_ms":-1}]}`, `{"provider":"openai"}`, `{"turns":null}`, `[]`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		m, err := script.Parse(raw)
		if err != nil {
			return
		}
		for step := range 3 {
			ctx, cancel := context.WithCancel(context.Background())
			cancel() // a delay must not hold the fuzzer: a cancelled context ends it
			_, _ = m.Infer(ctx, model.Request{RunID: "r", Step: step})
		}
	})
}
