package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/model"
)

// answer is the first choice of a completion, whole or assembled from a
// stream, before it is checked.
type answer struct {
	text    string
	refusal string
	finish  string // finish_reason
	calls   []wireCall
	usage   pipeline.Usage
}

// wireCall is a tool call as the wire carries it: arguments as JSON text.
type wireCall struct {
	id, typ, name, arguments string
}

// response checks the answer and converts it.
func (a answer) response() (model.Response, error) {
	if a.refusal != "" {
		return model.Response{}, fmt.Errorf("%w: %s", ErrRefused, cut(a.refusal, 500))
	}
	if a.finish == "content_filter" {
		return model.Response{}, fmt.Errorf("%w: the provider's content filter stopped the answer (finish_reason content_filter)", ErrRefused)
	}
	resp := model.Response{Text: a.text, Usage: a.usage}
	for i, c := range a.calls {
		if c.typ != "" && c.typ != "function" {
			return model.Response{}, fmt.Errorf("%w: tool_calls[%d] has type %q; only function tools are offered", ErrMalformedResponse, i, c.typ)
		}
		if c.name == "" {
			return model.Response{}, fmt.Errorf("%w: tool_calls[%d] (id %q) has no function name", ErrMalformedResponse, i, c.id)
		}
		resp.ToolCalls = append(resp.ToolCalls, pipeline.ToolCallRequest{ID: c.id, Name: c.name, Arguments: arguments(c.arguments)})
	}
	return resp, nil
}

// arguments keeps a call's arguments as the model wrote them. Valid JSON
// passes unchanged and empty means {}. Anything else (broken or truncated
// JSON, which models do produce) is kept as a JSON string value holding the
// text exactly, so nothing is lost: the call then fails the tool's schema
// validation with the model's own text to show for it, and the model is
// told, instead of the step failing here.
func arguments(text string) json.RawMessage {
	t := bytes.TrimSpace([]byte(text))
	switch {
	case len(t) == 0:
		return json.RawMessage(`{}`)
	case json.Valid(t):
		return json.RawMessage(t)
	default:
		s, _ := json.Marshal(text) // a string always marshals
		return s
	}
}

// whole asks for a non-streamed completion. The body is taken raw and
// decoded here, so a body that is not a completion gets a clear error
// rather than the SDK's decoding message.
func (m *Model) whole(ctx context.Context, params oai.ChatCompletionNewParams) (answer, error) {
	var body []byte
	if _, err := m.svc.New(ctx, params, option.WithResponseBodyInto(&body)); err != nil {
		return answer{}, m.failure(ctx, err)
	}
	return m.parse(body)
}

func (m *Model) parse(body []byte) (answer, error) {
	t := bytes.TrimSpace(body)
	if len(t) == 0 {
		return answer{}, fmt.Errorf("%w: empty body", ErrMalformedResponse)
	}
	if t[0] != '{' || !json.Valid(t) {
		return answer{}, fmt.Errorf("%w: the body is not a JSON object: %q", ErrMalformedResponse, cut(m.redact.String(string(t)), 200))
	}
	var failed struct {
		Error *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(t, &failed) == nil && failed.Error != nil {
		return answer{}, fmt.Errorf("%w: the body is an error: %s", ErrMalformedResponse, cut(m.redact.String(failed.Error.Message), 500))
	}
	var cc oai.ChatCompletion
	if err := json.Unmarshal(t, &cc); err != nil {
		return answer{}, fmt.Errorf("%w: %v", ErrMalformedResponse, err)
	}
	if len(cc.Choices) == 0 {
		return answer{}, fmt.Errorf("%w: no choices", ErrMalformedResponse)
	}
	c := cc.Choices[0]
	a := answer{
		text:    c.Message.Content,
		refusal: c.Message.Refusal,
		finish:  c.FinishReason,
		usage:   pipeline.Usage{InputTokens: cc.Usage.PromptTokens, OutputTokens: cc.Usage.CompletionTokens},
	}
	for _, tc := range c.Message.ToolCalls {
		a.calls = append(a.calls, wireCall{id: tc.ID, typ: tc.Type, name: tc.Function.Name, arguments: tc.Function.Arguments})
	}
	return a, nil
}
