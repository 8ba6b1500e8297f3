package openai

import (
	"bytes"
	"encoding/json"
	"fmt"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/model"
)

// emptySchema is the parameters of a tool that declares none.
const emptySchema = `{"type":"object"}`

// params maps a request to the Chat Completions wire format: the system
// prompt first, then the conversation, then the tools as functions. The
// step's override (a plugin's SetInferenceOverride) takes precedence over
// the configured model, temperature and max tokens.
func (m *Model) params(req model.Request) (oai.ChatCompletionNewParams, error) {
	p := oai.ChatCompletionNewParams{
		Model:       m.name,
		Temperature: m.temperature,
		MaxTokens:   m.maxTokens,
	}
	if o := req.Override; o.Model != "" {
		p.Model = o.Model
	}
	if o := req.Override; o.Temperature != nil {
		p.Temperature = oai.Float(*o.Temperature)
	}
	if o := req.Override; o.MaxTokens != nil {
		p.MaxTokens = oai.Int(int64(*o.MaxTokens))
	}
	if req.System != "" {
		p.Messages = append(p.Messages, oai.SystemMessage(req.System))
	}
	for i, msg := range req.Messages {
		wire, err := message(msg)
		if err != nil {
			return p, fmt.Errorf("messages[%d]: %w", i, err)
		}
		p.Messages = append(p.Messages, wire)
	}
	for i, t := range req.Tools {
		wire, err := tool(t)
		if err != nil {
			return p, fmt.Errorf("tools[%d] (%s): %w", i, t.Name, err)
		}
		p.Tools = append(p.Tools, wire)
	}
	return p, nil
}

func message(msg pipeline.Message) (oai.ChatCompletionMessageParamUnion, error) {
	switch msg.Role {
	case pipeline.RoleSystem:
		return oai.SystemMessage(msg.Content), nil
	case pipeline.RoleUser:
		return oai.UserMessage(msg.Content), nil
	case pipeline.RoleTool:
		if msg.ToolCallID == "" {
			return oai.ChatCompletionMessageParamUnion{}, fmt.Errorf("tool message without tool_call_id")
		}
		return oai.ToolMessage(msg.Content, msg.ToolCallID), nil
	case pipeline.RoleAssistant:
		var a oai.ChatCompletionAssistantMessageParam
		// Content may be left out (null) only when there are tool calls.
		if msg.Content != "" || len(msg.ToolCalls) == 0 {
			a.Content.OfString = oai.String(msg.Content)
		}
		for _, c := range msg.ToolCalls {
			a.ToolCalls = append(a.ToolCalls, oai.ChatCompletionMessageToolCallUnionParam{
				OfFunction: &oai.ChatCompletionMessageFunctionToolCallParam{
					ID: c.ID,
					Function: oai.ChatCompletionMessageFunctionToolCallFunctionParam{
						Name:      c.Name,
						Arguments: wireArguments(c.Arguments),
					},
				},
			})
		}
		return oai.ChatCompletionMessageParamUnion{OfAssistant: &a}, nil
	default:
		return oai.ChatCompletionMessageParamUnion{}, fmt.Errorf("unknown role %q", msg.Role)
	}
}

// wireArguments is a call's arguments as the wire carries them: JSON text.
func wireArguments(args json.RawMessage) string {
	args = bytes.TrimSpace(args)
	if len(args) == 0 {
		return "{}"
	}
	return string(args)
}

func tool(t model.ToolSpec) (oai.ChatCompletionToolUnionParam, error) {
	schema, err := parameters(t.Parameters)
	if err != nil {
		return oai.ChatCompletionToolUnionParam{}, err
	}
	fn := shared.FunctionDefinitionParam{Name: t.Name, Parameters: schema}
	if t.Description != "" {
		fn.Description = oai.String(t.Description)
	}
	return oai.ChatCompletionFunctionTool(fn), nil
}

// parameters is a tool's JSON Schema in the SDK's shape. Each top-level
// value stays a json.RawMessage, so the schema goes out byte for byte (no
// float rounding of big numbers, no reordering below the top level).
func parameters(raw json.RawMessage) (shared.FunctionParameters, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		raw = json.RawMessage(emptySchema)
	}
	var fields map[string]json.RawMessage
	if raw[0] != '{' || json.Unmarshal(raw, &fields) != nil {
		return nil, fmt.Errorf("parameters: want a JSON Schema object, got %s", describe(raw))
	}
	schema := make(shared.FunctionParameters, len(fields))
	for k, v := range fields {
		schema[k] = v
	}
	return schema, nil
}
