package script

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/model"
)

// Provider is the provider name of scripted models.
const Provider = "script"

// FinalText is the answer of a step past the last turn when loop_last is off.
const FinalText = "The script has no more turns."

// Turn is one scripted answer.
type Turn struct {
	Text      string          `json:"text"`
	ToolCalls []ScriptedCall  `json:"tool_calls,omitempty"`
	Usage     *pipeline.Usage `json:"usage,omitempty"`
	DelayMS   int             `json:"delay_ms,omitempty"`
	// StreamMS, when set, streams the text a word at a time (to a
	// request's OnText), StreamMS apart: what a streaming provider does.
	StreamMS int `json:"stream_ms,omitempty"`
}

// ScriptedCall is a tool call a turn proposes. An empty ID lets the step
// worker name the call.
type ScriptedCall struct {
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// Model is a parsed script. It is immutable and safe for concurrent use.
type Model struct {
	Provider string `json:"provider"`
	Turns    []Turn `json:"turns"`
	LoopLast bool   `json:"loop_last,omitempty"`
}

var _ model.Model = (*Model)(nil)

// Parse reads and validates a script model, reporting every problem at once.
func Parse(raw json.RawMessage) (*Model, error) {
	m, err := decode(raw)
	if err != nil {
		return nil, err
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return m, nil
}

func decode(raw json.RawMessage) (*Model, error) {
	var m Model
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("script model: %w", err)
	}
	return &m, nil
}

// Validate reports every problem of the script at once.
func (m *Model) Validate() error {
	var errs []error
	if m.Provider != Provider {
		errs = append(errs, fmt.Errorf("script model: provider is %q, want %q", m.Provider, Provider))
	}
	for i, t := range m.Turns {
		if t.DelayMS < 0 {
			errs = append(errs, fmt.Errorf("script model: turns[%d].delay_ms is negative", i))
		}
		if t.StreamMS < 0 {
			errs = append(errs, fmt.Errorf("script model: turns[%d].stream_ms is negative", i))
		}
		if t.DelayMS > maxWaitMS || t.StreamMS > maxWaitMS {
			errs = append(errs, fmt.Errorf("script model: turns[%d] waits more than %d ms (delay_ms %d, stream_ms %d)", i, maxWaitMS, t.DelayMS, t.StreamMS))
		}
		for j, c := range t.ToolCalls {
			if c.Name == "" {
				errs = append(errs, fmt.Errorf("script model: turns[%d].tool_calls[%d].name is missing", i, j))
			}
			if len(c.Arguments) > 0 && !isObject(c.Arguments) {
				errs = append(errs, fmt.Errorf("script model: turns[%d].tool_calls[%d].arguments is not a JSON object", i, j))
			}
		}
	}
	if m.LoopLast && len(m.Turns) == 0 {
		errs = append(errs, errors.New("script model: loop_last needs at least one turn"))
	}
	return errors.Join(errs...)
}

// ParseRun is Parse for the script a run brings (POST /v1/runs "model"),
// which may hold no answer back longer than limit
// (runs.max_script_delay): each turn that would is reported with its
// fields and the limit.
func ParseRun(raw json.RawMessage, limit time.Duration) (*Model, error) {
	m, err := decode(raw)
	if err != nil {
		return nil, err
	}
	var errs []error // the cap first: it names the setting a run may look up
	for i, t := range m.Turns {
		if !t.waitsWithin(limit) {
			errs = append(errs, fmt.Errorf("script model: turns[%d] waits longer than runs.max_script_delay (%s): delay_ms %d, stream_ms %d × %d words",
				i, limit, t.DelayMS, t.StreamMS, words(t.Text)))
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return m, nil
}

// maxWaitMS bounds delay_ms and stream_ms of any script, a run's or the
// configuration's: a year, far below where a time.Duration of that many
// milliseconds would overflow (and a ticker would panic).
const maxWaitMS = 365 * 24 * 3600 * 1000

// waitsWithin reports whether the turn holds its answer back for limit at
// most, counting in a way that cannot overflow.
func (t Turn) waitsWithin(limit time.Duration) bool {
	left := limit.Milliseconds() - int64(t.DelayMS)
	if left < 0 {
		return false
	}
	n := int64(words(t.Text))
	return t.StreamMS <= 0 || n == 0 || int64(t.StreamMS) <= left/n
}

// words counts the pieces stream hands text out in: a word with the
// spaces before it, and trailing spaces as a piece of their own.
func words(text string) int {
	n := 0
	for rest := text; rest != ""; rest = rest[nextPiece(rest):] {
		n++
	}
	return n
}

// nextPiece is the length of the piece stream hands out first from rest:
// the spaces before the first word and the word.
func nextPiece(rest string) int {
	word := strings.TrimLeftFunc(rest, unicode.IsSpace)
	if i := strings.IndexFunc(word, unicode.IsSpace); i >= 0 {
		return len(rest) - len(word) + i
	}
	return len(rest)
}

// Infer answers step req.Step with its turn, after the turn's delay.
func (m *Model) Infer(ctx context.Context, req model.Request) (model.Response, error) {
	turn, ok := m.turn(req.Step)
	if !ok {
		return model.Response{Text: FinalText}, nil
	}
	if turn.DelayMS > 0 {
		t := time.NewTimer(time.Duration(turn.DelayMS) * time.Millisecond)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return model.Response{}, ctx.Err()
		case <-t.C:
		}
	}
	if turn.StreamMS > 0 && req.OnText != nil {
		if err := stream(ctx, turn.Text, time.Duration(turn.StreamMS)*time.Millisecond, req.OnText); err != nil {
			return model.Response{}, err
		}
	}
	resp := model.Response{Text: turn.Text}
	if turn.Usage != nil {
		resp.Usage = *turn.Usage
	}
	for _, c := range turn.ToolCalls {
		args := c.Arguments
		if len(args) == 0 {
			args = json.RawMessage(`{}`)
		}
		resp.ToolCalls = append(resp.ToolCalls, pipeline.ToolCallRequest{ID: c.ID, Name: c.Name, Arguments: args})
	}
	return resp, nil
}

// stream hands text to onText a word (with the spaces before it) at a
// time, every apart.
func stream(ctx context.Context, text string, every time.Duration, onText func(string)) error {
	t := time.NewTicker(every)
	defer t.Stop()
	for rest := text; rest != ""; {
		n := nextPiece(rest)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		onText(rest[:n])
		rest = rest[n:]
	}
	return nil
}

func (m *Model) turn(step int) (Turn, bool) {
	switch {
	case step < len(m.Turns):
		return m.Turns[step], true
	case m.LoopLast && len(m.Turns) > 0:
		return m.Turns[len(m.Turns)-1], true
	default:
		return Turn{}, false
	}
}

func isObject(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) > 0 && t[0] == '{' && json.Valid(t)
}
