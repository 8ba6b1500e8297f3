package script_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stepwise-run/stepwise/pipeline/model"
	"github.com/stepwise-run/stepwise/pipeline/model/script"
)

func parse(t *testing.T, raw string) *script.Model {
	t.Helper()
	m, err := script.Parse(json.RawMessage(raw))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func infer(t *testing.T, m *script.Model, step int) model.Response {
	t.Helper()
	resp, err := m.Infer(context.Background(), model.Request{Step: step})
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func TestScript_step_n_answers_with_turn_n_then_a_final_text(t *testing.T) {
	m := parse(t, `{"provider":"script","turns":[
		{"text":"one","tool_calls":[{"id":"c","name":"echo","arguments":{"x":1}},{"name":"sleep"}],"usage":{"input_tokens":3,"output_tokens":2}},
		{"text":"two"}]}`)
	r := infer(t, m, 0)
	if r.Text != "one" || len(r.ToolCalls) != 2 || r.ToolCalls[0].ID != "c" || string(r.ToolCalls[0].Arguments) != `{"x":1}` ||
		string(r.ToolCalls[1].Arguments) != `{}` || r.Usage.InputTokens != 3 {
		t.Fatalf("step 0: %+v", r)
	}
	if r := infer(t, m, 1); r.Text != "two" || len(r.ToolCalls) != 0 {
		t.Fatalf("step 1: %+v", r)
	}
	if r := infer(t, m, 2); r.Text != script.FinalText {
		t.Fatalf("past the last turn: %+v", r)
	}
}

func TestScript_loop_last_repeats_the_last_turn(t *testing.T) {
	m := parse(t, `{"provider":"script","loop_last":true,"turns":[{"text":"a"},{"text":"again","tool_calls":[{"name":"echo"}]}]}`)
	if r := infer(t, m, 7); r.Text != "again" || len(r.ToolCalls) != 1 {
		t.Fatalf("step 7: %+v", r)
	}
}

func TestScript_a_delay_returns_when_cancelled(t *testing.T) {
	m := parse(t, `{"provider":"script","turns":[{"text":"slow","delay_ms":3600000}]}`)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := m.Infer(ctx, model.Request{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("error = %v", err)
	}
}

func TestScript_streams_the_text_a_word_at_a_time(t *testing.T) {
	m := parse(t, `{"provider":"script","turns":[{"text":"one  two\nthree ","stream_ms":1}]}`)
	var deltas []string
	r, err := m.Infer(context.Background(), model.Request{OnText: func(d string) { deltas = append(deltas, d) }})
	if err != nil || r.Text != "one  two\nthree " {
		t.Fatalf("%+v, %v", r, err)
	}
	if want := []string{"one", "  two", "\nthree", " "}; !slices.Equal(deltas, want) {
		t.Fatalf("deltas %q, want %q", deltas, want)
	}
}

func TestParse_reports_every_problem_at_once(t *testing.T) {
	_, err := script.Parse(json.RawMessage(`{"provider":"other","loop_last":true,"turns":[
		{"delay_ms":-1,"stream_ms":-1,"tool_calls":[{"arguments":[1]}]}]}`))
	for _, want := range []string{`provider is "other"`, "turns[0].delay_ms is negative", "turns[0].stream_ms is negative", "turns[0].tool_calls[0].name is missing", "turns[0].tool_calls[0].arguments is not a JSON object"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not say %q", err, want)
		}
	}
	if _, err := script.Parse(json.RawMessage(`{"provider":"script","turns":[],"temperature":1}`)); err == nil {
		t.Error("an unknown field was accepted")
	}
	if _, err := script.Parse(json.RawMessage(`{"provider":"script","loop_last":true}`)); err == nil {
		t.Error("loop_last without turns was accepted")
	}
}

func TestScript_a_runs_script_may_not_wait_past_the_limit(t *testing.T) {
	for _, tc := range []struct {
		name, turns string
		refused     string // "" when taken
	}{
		{"no wait", `[{"text":"hi"}]`, ""},
		{"a delay at the limit", `[{"text":"hi","delay_ms":1000}]`, ""},
		{"a delay and a stream at the limit", `[{"text":"one two","delay_ms":600,"stream_ms":200}]`, ""},
		{"a delay past it", `[{"text":"hi"},{"text":"hi","delay_ms":1001}]`, "turns[1] waits longer than runs.max_script_delay (1s): delay_ms 1001"},
		{"a delay that would overflow", `[{"text":"hi","delay_ms":99999999999999}]`, "turns[0] waits longer than runs.max_script_delay (1s): delay_ms 99999999999999"},
		{"a stream past it", `[{"text":"one two three","delay_ms":400,"stream_ms":201}]`, "stream_ms 201 × 3 words"},
		{"a stream that would overflow", `[{"text":"a b","stream_ms":9223372036854775807}]`, "stream_ms 9223372036854775807 × 2 words"},
		{"a stream of spaces only", `[{"text":" ","stream_ms":1001}]`, "stream_ms 1001 × 1 words"},
		{"trailing spaces are a piece of their own", `[{"text":"a ","stream_ms":501}]`, "stream_ms 501 × 2 words"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := script.ParseRun(json.RawMessage(`{"provider":"script","turns":`+tc.turns+`}`), time.Second)
			switch {
			case tc.refused == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.refused != "" && (err == nil || !strings.Contains(err.Error(), tc.refused)):
				t.Fatalf("got %v, want an error with %q", err, tc.refused)
			}
		})
	}
}

// No script, a run's or the configuration's, may wait so long that its
// wait overflows a time.Duration: the ticker of such a stream panicked.
func TestParse_refuses_a_wait_past_a_year(t *testing.T) {
	_, err := script.Parse(json.RawMessage(`{"provider":"script","turns":[{"text":"a b","stream_ms":9223372036854775807}]}`))
	if err == nil || !strings.Contains(err.Error(), "turns[0] waits more than 31536000000 ms") {
		t.Fatalf("got %v, want the wait refused", err)
	}
}
