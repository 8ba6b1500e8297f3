package builtin

import (
	"context"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/plugin"
)

// CutAction is the key of result_guard's action, which runs at
// AfterToolExecute: it cuts the call's result and error to the payload's
// max_bytes (a CutPayload). The plugin's hook schedules it for results that
// are too large; other plugins may schedule it too.
const CutAction = "result_guard.cut"

// DefaultMaxBytes is result_guard's max_bytes when the settings give none.
const DefaultMaxBytes = 4000

// ResultGuardSettings are the settings of the result_guard plugin.
type ResultGuardSettings struct {
	// MaxBytes is the largest result, in bytes of the text the model reads,
	// that passes uncut. 0 or absent: DefaultMaxBytes.
	MaxBytes int `json:"max_bytes,omitempty"`
}

func (s *ResultGuardSettings) setDefaults() {
	if s.MaxBytes == 0 {
		s.MaxBytes = DefaultMaxBytes
	}
}

// Validate reports every problem of the settings at once.
func (s ResultGuardSettings) Validate() error {
	var ps problems
	if s.MaxBytes < 1 {
		ps.add("max_bytes", "%d; want 1 or more", s.MaxBytes)
	}
	return ps.err()
}

// CutPayload is the payload of CutAction.
type CutPayload struct {
	MaxBytes int `json:"max_bytes"`
}

type resultGuard struct{ s ResultGuardSettings }

// NewResultGuard is the factory of the result_guard plugin (seed 004: large
// results are cut, with an explicit notice to the model). At
// AfterToolExecute, a result or an error longer than max_bytes is cut at a
// UTF-8 boundary to at most max_bytes and followed by a notice such as
//
//	[stepwise: the result was 51234 bytes; it was cut to the first 4000. Ask for a narrower result if you need more.]
//
// A cut result becomes a JSON string (the head of the text the model would
// have read: a string result's text, any other result's JSON), so the model
// reads head and notice as one text. The call's status is unchanged. It
// keeps no state and runs in the tool worker.
func NewResultGuard(settings json.RawMessage) (plugin.Plugin, error) {
	var s ResultGuardSettings
	if err := decode(settings, &s); err != nil {
		return nil, err
	}
	s.setDefaults()
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return resultGuard{s: s}, nil
}

func (g resultGuard) Register(reg *plugin.Registrar) error {
	reg.Hook(pipeline.PhaseAfterToolExecute, g.afterToolExecute)
	return reg.Action(CutAction, pipeline.PhaseAfterToolExecute, cutResult)
}

func (g resultGuard) afterToolExecute(_ context.Context, pc *plugin.Context) (plugin.Command, error) {
	var cmd plugin.Command
	if pc.Result == nil {
		return cmd, nil
	}
	if len(resultText(pc.Result.Value)) <= g.s.MaxBytes && len(pc.Result.Error) <= g.s.MaxBytes {
		return cmd, nil
	}
	err := cmd.Schedule(CutAction, CutPayload{MaxBytes: g.s.MaxBytes})
	return cmd, err
}

// cutResult is CutAction's handler.
func cutResult(_ context.Context, pc *plugin.Context, raw json.RawMessage) (plugin.Command, error) {
	var p CutPayload
	if err := json.Unmarshal(raw, &p); err != nil {
		return plugin.Command{}, fmt.Errorf("payload: %w", err)
	}
	if p.MaxBytes < 1 {
		return plugin.Command{}, fmt.Errorf("payload: max_bytes %d; want 1 or more", p.MaxBytes)
	}
	if pc.Result == nil {
		return plugin.Command{}, fmt.Errorf("no tool result in phase %s", pc.Phase)
	}
	if text := resultText(pc.Result.Value); len(text) > p.MaxBytes {
		b, err := json.Marshal(cut(text, p.MaxBytes, "result"))
		if err != nil {
			return plugin.Command{}, err
		}
		pc.Result.Value = b
	}
	if len(pc.Result.Error) > p.MaxBytes {
		pc.Result.Error = cut(pc.Result.Error, p.MaxBytes, "error")
	}
	return plugin.Command{}, nil
}

// resultText is the text the model reads for a result: a JSON string's
// contents, any other JSON as it is.
func resultText(v json.RawMessage) string {
	var s string
	if json.Unmarshal(v, &s) == nil {
		return s
	}
	return string(v)
}

// cut keeps at most limit bytes of s, ending at a UTF-8 boundary, and appends
// the notice that tells the model what happened. what names what was cut.
func cut(s string, limit int, what string) string {
	n := limit
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return fmt.Sprintf("%s\n[stepwise: the %s was %d bytes; it was cut to the first %d. Ask for a narrower result if you need more.]",
		s[:n], what, len(s), n)
}
