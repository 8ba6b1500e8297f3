package topics_test

import (
	"bytes"
	"errors"
	"os"
	"testing"

	"github.com/stepwise-run/stepwise/topics"
)

// The decoders of every topic's message, fuzzed. Whatever the bytes, Decode
// never panics and either fails with ErrMalformed or returns a message that
// validates and survives Encode and Decode unchanged. The seeds are the
// golden payloads and a few near misses.

func FuzzDecodeStepRequested(f *testing.F) {
	fuzzDecode[topics.StepRequested](f, "step_requested.v1.json")
}

func FuzzDecodeToolCallRequested(f *testing.F) {
	fuzzDecode[topics.ToolCallRequested](f, "tool_call_requested.v1.json")
}

func FuzzDecodeToolCallFinished(f *testing.F) {
	fuzzDecode[topics.ToolCallFinished](f, "tool_call_finished.v1.json")
}

func FuzzDecodeDecision(f *testing.F) { fuzzDecode[topics.Decision](f, "decision.v1.json") }

func FuzzDecodeRunResult(f *testing.F) { fuzzDecode[topics.RunResult](f, "run_result.v1.json") }

func FuzzDecodeDecisionOutcome(f *testing.F) {
	fuzzDecode[topics.DecisionOutcome](f, "decision_outcome.v1.json")
}

func fuzzDecode[M topics.Message](f *testing.F, golden string) {
	b, err := os.ReadFile("testdata/" + golden)
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range [][]byte{b, []byte(`{}`), []byte(`{"v":1,"run_id":""}`), []byte(`[]`), []byte(`{"v":99}`),
		bytes.Replace(b, []byte(`"`), []byte(`'`), 1)} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		m, err := topics.Decode[M](payload)
		if err != nil {
			if !errors.Is(err, topics.ErrMalformed) {
				t.Fatalf("Decode failed without ErrMalformed: %v", err)
			}
			return
		}
		if err := m.Validate(); err != nil {
			t.Fatalf("Decode returned a message that does not validate: %v", err)
		}
		once, err := topics.Encode(m)
		if err != nil {
			t.Fatalf("Encode of a decoded message: %v", err)
		}
		again, err := topics.Decode[M](once)
		if err != nil {
			t.Fatalf("a re-encoded message does not decode: %v\n%s", err, once)
		}
		twice, err := topics.Encode(again)
		if err != nil || !bytes.Equal(once, twice) {
			t.Fatalf("Encode/Decode is not stable:\n%s\n%s (%v)", once, twice, err)
		}
	})
}
