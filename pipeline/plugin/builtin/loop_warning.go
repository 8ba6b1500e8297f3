package builtin

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/plugin"
)

// State keys of the loop_warning plugin, both persistent.
var (
	// LoopRecentKey holds the signatures of the calls of the last window
	// steps that proposed calls, oldest first.
	LoopRecentKey = plugin.Key[[]string]{Name: "loop_warning.recent", Persistent: true}
	// LoopWarnKey is set, to the window, when the next inference must carry
	// the warning; the warning clears it.
	LoopWarnKey = plugin.Key[int]{Name: "loop_warning.warn", Persistent: true}
)

// DefaultLoopWindow is loop_warning's window when the settings give none.
const DefaultLoopWindow = 3

// LoopWarningSettings are the settings of the loop_warning plugin.
type LoopWarningSettings struct {
	// Window is how many steps in a row must propose the same calls for
	// the warning: 2 or more; 0 or absent: DefaultLoopWindow.
	Window int `json:"window,omitempty"`
}

func (s *LoopWarningSettings) setDefaults() {
	if s.Window == 0 {
		s.Window = DefaultLoopWindow
	}
}

// Validate reports every problem of the settings at once.
func (s LoopWarningSettings) Validate() error {
	var ps problems
	if s.Window < 2 {
		ps.add("window", "%d; want 2 or more steps", s.Window)
	}
	return ps.err()
}

type loopWarning struct{ s LoopWarningSettings }

// NewLoopWarning is the factory of the loop_warning plugin. At
// AfterInference it records the signature of the proposed calls — each
// call's tool and canonical arguments (pipeline.CanonicalJSON), in any
// order — in LoopRecentKey; when the last window steps all proposed the
// same calls it sets LoopWarnKey. At the next BeforeInference it schedules
// a system context message telling the model to change approach, and
// clears the flag. It warns; the agent's stop condition loop_detection is
// what ends a run that keeps looping.
func NewLoopWarning(settings json.RawMessage) (plugin.Plugin, error) {
	var s LoopWarningSettings
	if err := decode(settings, &s); err != nil {
		return nil, err
	}
	s.setDefaults()
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return loopWarning{s: s}, nil
}

func (l loopWarning) Register(reg *plugin.Registrar) error {
	reg.StateKey(LoopRecentKey.Name, LoopRecentKey.Persistent)
	reg.StateKey(LoopWarnKey.Name, LoopWarnKey.Persistent)
	reg.Hook(pipeline.PhaseAfterInference, l.afterInference)
	reg.Hook(pipeline.PhaseBeforeInference, l.beforeInference)
	return nil
}

func (l loopWarning) afterInference(_ context.Context, pc *plugin.Context) (plugin.Command, error) {
	var cmd plugin.Command
	if pc.Response == nil {
		return cmd, nil
	}
	recent, had, err := LoopRecentKey.Get(pc.State)
	if err != nil {
		return cmd, err
	}
	if len(pc.Response.ToolCalls) == 0 {
		if had {
			cmd.Delete(LoopRecentKey.Name)
		}
		return cmd, nil
	}
	sig, err := callSignature(pc.Response.ToolCalls)
	if err != nil {
		return cmd, err
	}
	recent = append(recent, sig)
	if len(recent) > l.s.Window {
		recent = recent[len(recent)-l.s.Window:]
	}
	if err := LoopRecentKey.Set(&cmd, recent); err != nil {
		return cmd, err
	}
	if len(recent) == l.s.Window && !slices.ContainsFunc(recent, func(s string) bool { return s != sig }) {
		err = LoopWarnKey.Set(&cmd, l.s.Window)
	}
	return cmd, err
}

func (l loopWarning) beforeInference(_ context.Context, pc *plugin.Context) (plugin.Command, error) {
	var cmd plugin.Command
	n, ok, err := LoopWarnKey.Get(pc.State)
	if err != nil || !ok {
		return cmd, err
	}
	cmd.Delete(LoopWarnKey.Name)
	err = cmd.Schedule(plugin.AddContextMessage, plugin.ContextMessage{
		Role: pipeline.RoleSystem,
		Content: fmt.Sprintf("You have proposed the same tool calls, with the same arguments, in each of your last %d steps; "+
			"repeating them will not change the outcome. Change approach.", n),
	})
	return cmd, err
}

// callSignature identifies a set of calls by tool and canonical arguments,
// whatever their order and ids: a short hex hash (the state stays small
// whatever the arguments' size). Arguments that are not JSON count as
// written.
func callSignature(calls []pipeline.ToolCallRequest) (string, error) {
	parts := make([][2]string, len(calls))
	for i, c := range calls {
		args, err := pipeline.CanonicalJSON(c.Arguments)
		if err != nil {
			args = c.Arguments
		}
		parts[i] = [2]string{c.Name, string(args)}
	}
	slices.SortFunc(parts, func(a, b [2]string) int {
		return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1]))
	})
	b, err := json.Marshal(parts)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:12]), nil
}
