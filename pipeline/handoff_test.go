package pipeline_test

import (
	"reflect"
	"testing"

	"github.com/stepwise-run/stepwise/pipeline"
)

func TestSinceHandoff_keeps_the_last_user_message_and_what_follows_the_handoff(t *testing.T) {
	sys := pipeline.Message{Role: pipeline.RoleSystem, Content: "be brief"}
	u1 := pipeline.Message{Role: pipeline.RoleUser, Content: "hi"}
	a1 := pipeline.Message{Role: pipeline.RoleAssistant, Content: "how can I help?"}
	u2 := pipeline.Message{Role: pipeline.RoleUser, Content: "refund order 7"}
	turn := pipeline.Message{Role: pipeline.RoleAssistant, ToolCalls: []pipeline.ToolCallRequest{{ID: "look"}, {ID: "h1"}}}
	r1 := pipeline.Message{Role: pipeline.RoleTool, ToolCallID: "look", Content: "{}"}
	r2 := pipeline.Message{Role: pipeline.RoleTool, ToolCallID: "h1", Content: `{"assistant":"refunds"}`}
	next := pipeline.Message{Role: pipeline.RoleAssistant, Content: "refunding"}
	msgs := []pipeline.Message{sys, u1, a1, u2, turn, r1, r2, next}

	cases := []struct {
		name   string
		msgs   []pipeline.Message
		callID string
		want   []pipeline.Message
	}{
		{"right after the handoff", msgs[:7], "h1", []pipeline.Message{sys, u2}},
		{"steps later", msgs, "h1", []pipeline.Message{sys, u2, next}},
		{"a call that is no handoff's", msgs, "nobody", msgs},
		{"no user message before it", []pipeline.Message{turn, r1, r2}, "h1", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := pipeline.SinceHandoff(c.msgs, c.callID); !reflect.DeepEqual(got, c.want) {
				t.Errorf("SinceHandoff = %+v\nwant %+v", got, c.want)
			}
		})
	}
}
