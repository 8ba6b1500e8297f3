package builtin

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/plugin"
)

// ReminderSettings are the settings of the reminder plugin.
type ReminderSettings struct {
	// Message is the text of the reminder. Required.
	Message string `json:"message"`
	// Role is the reminder's role: system (default), user or assistant.
	Role pipeline.Role `json:"role,omitempty"`
	// Every reminds on the first step and every Every-th step after it
	// (steps 0, Every, 2·Every, ...). 0 or absent: every step.
	Every int `json:"every,omitempty"`
	// WhenToolFailed reminds only when a call of the previous step failed:
	// when one of the tool messages that end the conversation starts with
	// "error:".
	WhenToolFailed bool `json:"when_tool_failed,omitempty"`
}

func (s *ReminderSettings) setDefaults() {
	if s.Role == "" {
		s.Role = pipeline.RoleSystem
	}
	if s.Every == 0 {
		s.Every = 1
	}
}

// Validate reports every problem of the settings at once.
func (s ReminderSettings) Validate() error {
	var ps problems
	if strings.TrimSpace(s.Message) == "" {
		ps.add("message", "required")
	}
	switch s.Role {
	case pipeline.RoleSystem, pipeline.RoleUser, pipeline.RoleAssistant:
	default:
		ps.add("role", "%q; want system, user or assistant", s.Role)
	}
	if s.Every < 1 {
		ps.add("every", "%d; want 1 or more steps", s.Every)
	}
	return ps.err()
}

type reminder struct{ s ReminderSettings }

// NewReminder is the factory of the reminder plugin: at BeforeInference it
// schedules plugin.AddContextMessage with the configured message, on the
// steps the settings select. It keeps no state.
func NewReminder(settings json.RawMessage) (plugin.Plugin, error) {
	var s ReminderSettings
	if err := decode(settings, &s); err != nil {
		return nil, err
	}
	s.setDefaults()
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return reminder{s: s}, nil
}

func (r reminder) Register(reg *plugin.Registrar) error {
	reg.Hook(pipeline.PhaseBeforeInference, r.beforeInference)
	return nil
}

func (r reminder) beforeInference(_ context.Context, pc *plugin.Context) (plugin.Command, error) {
	var cmd plugin.Command
	if pc.Run.Step%r.s.Every != 0 {
		return cmd, nil
	}
	if r.s.WhenToolFailed && !previousCallFailed(pc.Messages) {
		return cmd, nil
	}
	err := cmd.Schedule(plugin.AddContextMessage, plugin.ContextMessage{Role: r.s.Role, Content: r.s.Message})
	return cmd, err
}

// previousCallFailed reports whether one of the tool messages that end msgs
// — the outcomes of the previous step's calls — tells of a failure (the
// step worker writes those as "error: ...").
func previousCallFailed(msgs []pipeline.Message) bool {
	for i := len(msgs) - 1; i >= 0 && msgs[i].Role == pipeline.RoleTool; i-- {
		if strings.HasPrefix(msgs[i].Content, "error:") {
			return true
		}
	}
	return false
}
