package builtin_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/plugin"
	"github.com/stepwise-run/stepwise/pipeline/plugin/builtin"
)

func afterTool(t *testing.T, set *plugin.Set, res plugin.Result) *plugin.Context {
	t.Helper()
	pc := &plugin.Context{
		Phase:  pipeline.PhaseAfterToolExecute,
		Run:    pipeline.Run{ID: "r-1", Step: 2},
		Call:   &pipeline.ToolCall{ID: "c-1", Tool: "read_log"},
		Result: &res,
	}
	if later := run(t, set, pc); len(later) > 0 {
		t.Fatalf("actions left for other phases: %+v", later)
	}
	return pc
}

// cutText decodes a cut result, which must be a JSON string.
func cutText(t *testing.T, v json.RawMessage) string {
	t.Helper()
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		t.Fatalf("cut result %s is not a JSON string: %v", v, err)
	}
	return s
}

func TestResultGuard_cuts_a_large_string_result_with_a_notice(t *testing.T) {
	set := build(t, builtin.ResultGuard, `{"max_bytes": 100}`)
	long := strings.Repeat("log line\n", 1000) // 9000 bytes
	pc := afterTool(t, set, plugin.Result{Status: pipeline.CallSucceeded, Value: mustJSON(t, long)})

	got := cutText(t, pc.Result.Value)
	head, notice, ok := strings.Cut(got, "\n[stepwise: ")
	if !ok {
		t.Fatalf("no notice in %q", got)
	}
	if head != long[:100] {
		t.Errorf("head %q, want the first 100 bytes", head)
	}
	if want := "the result was 9000 bytes; it was cut to the first 100. Ask for a narrower result if you need more.]"; notice != want {
		t.Errorf("notice %q, want %q", notice, want)
	}
	if pc.Result.Status != pipeline.CallSucceeded {
		t.Errorf("status %s, want it unchanged", pc.Result.Status)
	}
}

func TestResultGuard_cuts_at_a_utf8_boundary(t *testing.T) {
	set := build(t, builtin.ResultGuard, `{"max_bytes": 7}`)
	pc := afterTool(t, set, plugin.Result{Status: pipeline.CallSucceeded, Value: mustJSON(t, strings.Repeat("é", 50))})

	got := cutText(t, pc.Result.Value)
	head, _, _ := strings.Cut(got, "\n[stepwise: ")
	if head != "ééé" || !utf8.ValidString(got) {
		t.Fatalf("head %q, want 3 whole runes (6 bytes)", head)
	}
	if !strings.Contains(got, "cut to the first 6.") {
		t.Errorf("notice of %q does not say 6 bytes were kept", got)
	}
}

func TestResultGuard_cuts_a_large_object_result_as_its_json_text(t *testing.T) {
	set := build(t, builtin.ResultGuard, `{"max_bytes": 20}`)
	value := mustJSON(t, map[string]string{"rows": strings.Repeat("x", 100)})
	pc := afterTool(t, set, plugin.Result{Status: pipeline.CallSucceeded, Value: value})

	if got := cutText(t, pc.Result.Value); !strings.HasPrefix(got, string(value[:20])+"\n[stepwise: the result was 111 bytes") {
		t.Fatalf("cut result %q", got)
	}
}

func TestResultGuard_cuts_a_large_error(t *testing.T) {
	set := build(t, builtin.ResultGuard, `{"max_bytes": 10}`)
	pc := afterTool(t, set, plugin.Result{Status: pipeline.CallFailed, Error: strings.Repeat("E", 30)})

	if want := "EEEEEEEEEE\n[stepwise: the error was 30 bytes; it was cut to the first 10. Ask for a narrower result if you need more.]"; pc.Result.Error != want {
		t.Fatalf("error %q, want %q", pc.Result.Error, want)
	}
}

func TestResultGuard_leaves_a_small_result_alone(t *testing.T) {
	set := build(t, builtin.ResultGuard, "")
	value := mustJSON(t, strings.Repeat("x", builtin.DefaultMaxBytes))
	pc := afterTool(t, set, plugin.Result{Status: pipeline.CallSucceeded, Value: value})

	if string(pc.Result.Value) != string(value) {
		t.Fatalf("result changed to %.80s...", pc.Result.Value)
	}
}

func TestResultGuard_cut_is_an_after_tool_execute_action_others_may_schedule(t *testing.T) {
	set := build(t, builtin.ResultGuard, `{"max_bytes": 4000}`)
	if phase, ok := set.Phase(builtin.CutAction); !ok || phase != pipeline.PhaseAfterToolExecute {
		t.Fatalf("phase of %s: %s, %v", builtin.CutAction, phase, ok)
	}
	pc := &plugin.Context{
		Phase:  pipeline.PhaseAfterToolExecute,
		Result: &plugin.Result{Status: pipeline.CallSucceeded, Value: mustJSON(t, "0123456789")},
	}
	run(t, set, pc, plugin.Action{Key: builtin.CutAction, Payload: mustJSON(t, builtin.CutPayload{MaxBytes: 4})})
	if got := cutText(t, pc.Result.Value); !strings.HasPrefix(got, "0123\n[stepwise: the result was 10 bytes") {
		t.Fatalf("cut result %q", got)
	}
}

func TestResultGuard_settings_refuse_a_negative_max_bytes(t *testing.T) {
	_, err := builtin.NewResultGuard(json.RawMessage(`{"max_bytes": -1}`))
	if !errors.Is(err, builtin.ErrInvalidSettings) || !strings.Contains(err.Error(), "max_bytes: -1") {
		t.Fatalf("error %v, want ErrInvalidSettings naming max_bytes", err)
	}
}
