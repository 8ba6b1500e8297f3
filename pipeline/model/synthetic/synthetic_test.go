package synthetic_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stepwise-run/stepwise/pipeline/model"
	"github.com/stepwise-run/stepwise/pipeline/model/synthetic"
)

const benchConfig = `{"provider":"synthetic","latency_ms":50,"latency_jitter_ms":20,"tool_calls_per_step":2,"tool":"echo",` +
	`"steps":3,"input_tokens":100,"output_tokens":20,"seed":1}`

func parse(t *testing.T, raw string) *synthetic.Model {
	t.Helper()
	m, err := synthetic.Parse(json.RawMessage(raw))
	if err != nil {
		t.Fatalf("Parse(%s): %v", raw, err)
	}
	return m
}

func infer(t *testing.T, m *synthetic.Model, run string, step int) model.Response {
	t.Helper()
	resp, err := m.Infer(context.Background(), model.Request{RunID: run, Step: step})
	if err != nil {
		t.Fatalf("Infer(%s, %d): %v", run, step, err)
	}
	return resp
}

func asJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestInfer_calls_the_tool_for_the_configured_steps_then_answers(t *testing.T) {
	m := parse(t, `{"provider":"synthetic","tool_calls_per_step":2,"tool":"lookup","steps":3,"input_tokens":100,"output_tokens":20}`)
	for step := range 3 {
		resp := infer(t, m, "r-1", step)
		if len(resp.ToolCalls) != 2 {
			t.Fatalf("step %d: %d calls, want 2", step, len(resp.ToolCalls))
		}
		for i, c := range resp.ToolCalls {
			var args struct {
				RunID string `json:"run_id"`
				Step  int    `json:"step"`
				Call  int    `json:"call"`
			}
			if err := json.Unmarshal(c.Arguments, &args); err != nil {
				t.Fatalf("arguments %s: %v", c.Arguments, err)
			}
			if c.Name != "lookup" || c.ID == "" || args.RunID != "r-1" || args.Step != step || args.Call != i {
				t.Errorf("step %d call %d = %+v (%s)", step, i, c, c.Arguments)
			}
		}
		if resp.ToolCalls[0].ID == resp.ToolCalls[1].ID {
			t.Errorf("step %d: call ids repeat: %s", step, resp.ToolCalls[0].ID)
		}
		if resp.Usage.InputTokens != 100 || resp.Usage.OutputTokens != 20 {
			t.Errorf("step %d: usage %+v", step, resp.Usage)
		}
	}
	for _, step := range []int{3, 4} {
		if resp := infer(t, m, "r-1", step); len(resp.ToolCalls) != 0 || resp.Text == "" {
			t.Errorf("step %d = %+v; want a final text without calls", step, resp)
		}
	}
}

func TestInfer_is_deterministic_per_seed_run_and_step(t *testing.T) {
	a, b := parse(t, benchConfig), parse(t, benchConfig)
	for _, run := range []string{"r-1", "r-2"} {
		for step := range 4 {
			ra, rb := infer(t, a, run, step), infer(t, b, run, step)
			if asJSON(t, ra) != asJSON(t, rb) {
				t.Errorf("%s step %d differs between two models of one config:\n%s\n%s", run, step, asJSON(t, ra), asJSON(t, rb))
			}
			if a.Latency(run, step) != b.Latency(run, step) || a.Latency(run, step) != a.Latency(run, step) {
				t.Errorf("%s step %d: latency is not repeatable", run, step)
			}
		}
	}
	if asJSON(t, infer(t, a, "r-1", 0)) == asJSON(t, infer(t, a, "r-2", 0)) {
		t.Error("two runs answer identically; their random values should differ")
	}
	other := parse(t, strings.Replace(benchConfig, `"seed":1`, `"seed":2`, 1))
	if asJSON(t, infer(t, a, "r-1", 0)) == asJSON(t, infer(t, other, "r-1", 0)) {
		t.Error("two seeds answer identically")
	}
}

func TestLatency_stays_within_the_jitter(t *testing.T) {
	m := parse(t, benchConfig)
	lo, hi := 30*time.Millisecond, 70*time.Millisecond
	seen := map[time.Duration]bool{}
	for i := range 200 {
		d := m.Latency("r-"+string(rune('a'+i%26))+string(rune('a'+i/26)), i%5)
		if d < lo || d > hi {
			t.Fatalf("latency %v outside [%v, %v]", d, lo, hi)
		}
		seen[d] = true
	}
	if len(seen) < 100 {
		t.Errorf("only %d distinct latencies in 200 steps; jitter looks broken", len(seen))
	}
	if d := parse(t, `{"provider":"synthetic","latency_ms":5}`).Latency("r", 0); d != 5*time.Millisecond {
		t.Errorf("latency without jitter = %v, want 5ms", d)
	}
}

func TestInfer_uses_the_configured_arguments(t *testing.T) {
	m := parse(t, `{"provider":"synthetic","tool":"sleep","arguments":{"ms":3}}`)
	resp := infer(t, m, "r", 0)
	if len(resp.ToolCalls) != 1 || resp.ToolCalls[0].Name != "sleep" || string(resp.ToolCalls[0].Arguments) != `{"ms":3}` {
		t.Errorf("calls = %s", asJSON(t, resp.ToolCalls))
	}
}

func TestInfer_streams_its_text_and_returns_on_cancel(t *testing.T) {
	m := parse(t, `{"provider":"synthetic","latency_ms":600000}`)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := m.Infer(ctx, model.Request{RunID: "r", Step: 0})
		done <- err
	}()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v; want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Infer did not return after cancel")
	}

	fast := parse(t, `{"provider":"synthetic"}`)
	var text strings.Builder
	resp, err := fast.Infer(context.Background(), model.Request{RunID: "r", OnText: func(d string) { text.WriteString(d) }})
	if err != nil || text.String() != resp.Text || resp.Text == "" {
		t.Errorf("OnText got %q, text %q, err %v", text.String(), resp.Text, err)
	}
}

func TestParse_fills_in_the_defaults(t *testing.T) {
	m := parse(t, `{"provider":"synthetic","name":"bench","api_key_env":"X","base_url":"http://x"}`)
	if got, want := asJSON(t, m.Config()), asJSON(t, synthetic.DefaultConfig()); got != want {
		t.Errorf("config = %s, want %s", got, want)
	}
}

func TestParse_reports_every_problem_at_once(t *testing.T) {
	_, err := synthetic.Parse(json.RawMessage(`{"provider":"synthetic","latency_ms":-1,"latency_jitter_ms":"lots",
		"tool_calls_per_step":-2,"steps":-1,"input_tokens":-5,"output_tokens":1.5,"seed":"x","arguments":[1],"latency":3}`))
	if err == nil {
		t.Fatal("Parse accepted a bad config")
	}
	for _, want := range []string{"latency_ms: must not be negative", "latency_jitter_ms: want a whole number", "tool_calls_per_step",
		"steps", "input_tokens", "output_tokens: want a whole number", "seed: want a whole number", "arguments: want a JSON object",
		"latency: unknown setting"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("err lacks %q:\n%v", want, err)
		}
	}
	for _, raw := range []string{
		`{"provider":"synthetic","latency_ms":10,"latency_jitter_ms":11}`,
		`{"provider":"synthetic","tool":""}`,
		`{"provider":"script"}`,
		`[]`, ``,
	} {
		if _, err := synthetic.Parse(json.RawMessage(raw)); err == nil {
			t.Errorf("Parse(%s) accepted it", raw)
		}
	}
	if _, err := synthetic.Parse(json.RawMessage(`{"provider":"synthetic","tool":"","tool_calls_per_step":0}`)); err != nil {
		t.Errorf("no calls need no tool: %v", err)
	}
}
