package builtin_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/plugin"
	"github.com/stepwise-run/stepwise/pipeline/plugin/builtin"
)

func reminderAt(t *testing.T, set *plugin.Set, step int, msgs ...pipeline.Message) []pipeline.Message {
	t.Helper()
	pc := &plugin.Context{
		Phase:    pipeline.PhaseBeforeInference,
		Run:      pipeline.Run{ID: "r-1", Step: step},
		Messages: msgs,
		Request:  &plugin.Request{Messages: msgs},
	}
	run(t, set, pc)
	return contextMessages(pc.Request, len(msgs))
}

func TestReminder_adds_a_system_message_before_every_inference_by_default(t *testing.T) {
	set := build(t, builtin.Reminder, `{"message": "Answer in English."}`)
	for step := range 3 {
		got := reminderAt(t, set, step, pipeline.Message{Role: pipeline.RoleUser, Content: "hi"})
		want := []pipeline.Message{{Role: pipeline.RoleSystem, Content: "Answer in English."}}
		if len(got) != 1 || got[0].Role != want[0].Role || got[0].Content != want[0].Content {
			t.Fatalf("step %d: context messages %+v, want %+v", step, got, want)
		}
	}
}

func TestReminder_every_n_steps_reminds_on_the_first_and_every_nth_step(t *testing.T) {
	set := build(t, builtin.Reminder, `{"message": "Stay on topic.", "role": "user", "every": 3}`)
	for step, want := range []bool{true, false, false, true, false, false, true} {
		got := reminderAt(t, set, step)
		if (len(got) == 1) != want {
			t.Fatalf("step %d: context messages %+v, want a reminder: %v", step, got, want)
		}
		if want && got[0].Role != pipeline.RoleUser {
			t.Fatalf("step %d: role %q, want user", step, got[0].Role)
		}
	}
}

func TestReminder_when_tool_failed_reminds_only_after_a_failed_call(t *testing.T) {
	set := build(t, builtin.Reminder, `{"message": "A tool failed: read its error before you retry.", "when_tool_failed": true}`)
	user := pipeline.Message{Role: pipeline.RoleUser, Content: "go"}
	asst := pipeline.Message{Role: pipeline.RoleAssistant}
	ok := pipeline.Message{Role: pipeline.RoleTool, ToolCallID: "c-1", Content: `{"ok":true}`}
	failed := pipeline.Message{Role: pipeline.RoleTool, ToolCallID: "c-2", Content: "error: timeout"}
	cases := []struct {
		name string
		msgs []pipeline.Message
		want bool
	}{
		{"first step", []pipeline.Message{user}, false},
		{"all calls succeeded", []pipeline.Message{user, asst, ok}, false},
		{"one call of the last step failed", []pipeline.Message{user, asst, ok, failed}, true},
		{"a failure of an earlier step", []pipeline.Message{user, asst, failed, asst, ok}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := reminderAt(t, set, 1, c.msgs...); (len(got) == 1) != c.want {
				t.Fatalf("context messages %+v, want a reminder: %v", got, c.want)
			}
		})
	}
}

func TestReminder_settings_report_every_problem_at_once(t *testing.T) {
	_, err := builtin.Registry().Build(map[string]json.RawMessage{
		builtin.Reminder: json.RawMessage(`{"message": " ", "role": "tool", "every": -2}`),
	})
	if !errors.Is(err, builtin.ErrInvalidSettings) || !strings.HasPrefix(err.Error(), "plugin reminder: ") {
		t.Fatalf("error %v, want ErrInvalidSettings", err)
	}
	for _, want := range []string{"message: required", `role: "tool"`, "every: -2"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

func TestReminder_settings_refuse_an_unknown_field(t *testing.T) {
	_, err := builtin.NewReminder([]byte(`{"message": "x", "evry": 2}`))
	if !errors.Is(err, builtin.ErrInvalidSettings) || !strings.Contains(err.Error(), "evry") {
		t.Fatalf("error %v, want ErrInvalidSettings naming evry", err)
	}
}
