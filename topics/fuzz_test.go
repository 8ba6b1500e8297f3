package topics_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"testing"

	"github.com/stepwise-run/stepwise/topics"
)

// The decoders of every topic's message, fuzzed. Whatever the bytes, Decode
// never panics and either fails with ErrMalformed or returns a message that
// validates and survives Encode and Decode unchanged. It also takes and
// refuses what the standard library's encoding/json would, with the same
// values: the codec uses github.com/segmentio/encoding/json for speed, and
// a message must not mean something else to it. The seeds are the golden
// payloads and a few near misses. A Decision comes from other systems and is
// held to CheckText as well (a key twice, bytes not UTF-8), so the standard
// library's reading of it is too.

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

func FuzzDecodeRunRequested(f *testing.F) {
	fuzzDecode[topics.RunRequested](f, "run_requested.v1.json")
}

func FuzzDecodeRunRequestOutcome(f *testing.F) {
	fuzzDecode[topics.RunRequestOutcome](f, "run_request_outcome.v1.json")
}

func FuzzDecodeApprovalRequested(f *testing.F) {
	fuzzDecode[topics.ApprovalRequested](f, "approval_requested.v1.json")
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
		if std, serr := decodeStd[M](payload); (err == nil) != (serr == nil) || (err == nil && !reflect.DeepEqual(m, std)) {
			t.Fatalf("Decode = %+v, %v; with encoding/json %+v, %v", m, err, std, serr)
		}
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

// decodeStd is Decode with the standard library's encoding/json.
func decodeStd[M topics.Message](payload []byte) (M, error) {
	var m M
	trimmed := bytes.TrimSpace(payload)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return m, errors.New("not a JSON object")
	}
	switch any(m).(type) {
	case topics.Decision, topics.RunRequested:
		if err := topics.CheckText(trimmed); err != nil {
			return m, err
		}
	}
	if err := json.Unmarshal(trimmed, &m); err != nil {
		return m, err
	}
	return m, m.Validate()
}
