package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/model"
)

// Keys of the runtime's built-in actions, with the phase each runs in.
const (
	AddContextMessage    = "runtime.add_context_message"    // BeforeInference; payload ContextMessage
	SetInferenceOverride = "runtime.set_inference_override" // BeforeInference; payload model.Override
	ExcludeTool          = "runtime.exclude_tool"           // BeforeInference; payload "tool"
	IncludeOnlyTools     = "runtime.include_only_tools"     // BeforeInference; payload ["tool", ...]
	SkipInference        = "runtime.skip_inference"         // BeforeInference; payload "reason"
	ToolIntercept        = "tool_intercept"                 // ToolGate; payload Intercept
	EditToolCall         = "runtime.edit_tool_call"         // AfterInference; payload ToolCallEdit
	DropToolCall         = "runtime.drop_tool_call"         // AfterInference; payload index
	RequestTermination   = "runtime.request_termination"    // AfterInference; payload "reason"
)

// ToolCallEdit is the payload of EditToolCall: which proposed call (its
// index among the model's calls, from 0) and what replaces its name and
// arguments (empty fields keep them).
type ToolCallEdit struct {
	Index     int             `json:"index"`
	Name      string          `json:"name,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// ContextMessage is the payload of AddContextMessage: a message added to
// this step's inference only, not to the run's history.
type ContextMessage struct {
	Role    pipeline.Role `json:"role"`
	Content string        `json:"content"`
}

// Intercept is the payload of ToolIntercept: the intercept, and which calls
// of the step it is for (none named: the call being gated).
type Intercept struct {
	pipeline.Intercept
	Tool   string `json:"tool,omitempty"`
	CallID string `json:"call_id,omitempty"`
}

func registerRuntimeActions(r *Registrar) {
	must := func(err error) {
		if err != nil {
			panic(err) // the runtime's own keys are distinct
		}
	}
	must(r.Action(AddContextMessage, pipeline.PhaseBeforeInference, onRequest(func(req *Request, m ContextMessage) error {
		if m.Role == "" {
			m.Role = pipeline.RoleSystem
		}
		req.Messages = append(req.Messages, pipeline.Message{Role: m.Role, Content: m.Content})
		return nil
	})))
	must(r.Action(SetInferenceOverride, pipeline.PhaseBeforeInference, onRequest(func(req *Request, o model.Override) error {
		req.Override = req.Override.Merge(o)
		return nil
	})))
	must(r.Action(ExcludeTool, pipeline.PhaseBeforeInference, onRequest(func(req *Request, tool string) error {
		req.Tools = slices.DeleteFunc(req.Tools, func(t model.ToolSpec) bool { return t.Name == tool })
		return nil
	})))
	must(r.Action(IncludeOnlyTools, pipeline.PhaseBeforeInference, onRequest(func(req *Request, tools []string) error {
		req.Tools = slices.DeleteFunc(req.Tools, func(t model.ToolSpec) bool { return !slices.Contains(tools, t.Name) })
		return nil
	})))
	must(r.Action(SkipInference, pipeline.PhaseBeforeInference, func(_ context.Context, pc *Context, raw json.RawMessage) (Command, error) {
		pc.Skip = reasonOr(raw, "a plugin asked to skip inference")
		return Command{}, nil
	}))
	must(r.Action(EditToolCall, pipeline.PhaseAfterInference, onResponse(func(pc *Context, e ToolCallEdit) error {
		if e.Name != "" {
			pc.Response.ToolCalls[e.Index].Name = e.Name
		}
		if len(e.Arguments) > 0 {
			pc.Response.ToolCalls[e.Index].Arguments = e.Arguments
		}
		return nil
	}, func(e ToolCallEdit) int { return e.Index })))
	must(r.Action(DropToolCall, pipeline.PhaseAfterInference, onResponse(func(pc *Context, i int) error {
		if !slices.Contains(pc.Drop, i) {
			pc.Drop = append(pc.Drop, i)
		}
		return nil
	}, func(i int) int { return i })))
	must(r.Action(RequestTermination, pipeline.PhaseAfterInference, func(_ context.Context, pc *Context, raw json.RawMessage) (Command, error) {
		pc.End = reasonOr(raw, "a plugin asked to end the run")
		return Command{}, nil
	}))
	must(r.Action(ToolIntercept, pipeline.PhaseToolGate, func(_ context.Context, pc *Context, raw json.RawMessage) (Command, error) {
		var in Intercept
		if err := json.Unmarshal(raw, &in); err != nil {
			return Command{}, fmt.Errorf("payload: %w", err)
		}
		if pc.Call == nil {
			return Command{}, fmt.Errorf("no call is being gated")
		}
		if (in.Tool != "" && in.Tool != pc.Call.Tool) || (in.CallID != "" && in.CallID != pc.Call.ID) {
			return Command{}, nil
		}
		pc.Intercepts = append(pc.Intercepts, in.Intercept)
		return Command{}, nil
	}))
}

// onRequest adapts a change of the inference request to a Handler.
func onRequest[P any](change func(*Request, P) error) Handler {
	return func(_ context.Context, pc *Context, raw json.RawMessage) (Command, error) {
		if pc.Request == nil {
			return Command{}, fmt.Errorf("no inference request in phase %s", pc.Phase)
		}
		var p P
		if err := json.Unmarshal(raw, &p); err != nil {
			return Command{}, fmt.Errorf("payload: %w", err)
		}
		return Command{}, change(pc.Request, p)
	}
}

// onResponse adapts a change of the model's proposed calls to a Handler;
// index says which call the payload names (its index when the model
// answered: drops apply after the phase, so indexes stay put).
func onResponse[P any](change func(*Context, P) error, index func(P) int) Handler {
	return func(_ context.Context, pc *Context, raw json.RawMessage) (Command, error) {
		if pc.Response == nil {
			return Command{}, fmt.Errorf("no model response in phase %s", pc.Phase)
		}
		var p P
		if err := json.Unmarshal(raw, &p); err != nil {
			return Command{}, fmt.Errorf("payload: %w", err)
		}
		if i := index(p); i < 0 || i >= len(pc.Response.ToolCalls) {
			return Command{}, fmt.Errorf("no proposed call %d: the model proposed %d", i, len(pc.Response.ToolCalls))
		}
		return Command{}, change(pc, p)
	}
}

// reasonOr is the reason a payload gives (a JSON string), or def when it
// gives none.
func reasonOr(raw json.RawMessage, def string) string {
	var reason string
	if err := json.Unmarshal(raw, &reason); err != nil || reason == "" {
		return def
	}
	return reason
}
