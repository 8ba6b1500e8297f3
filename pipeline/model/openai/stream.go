package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/stepwise-run/stepwise/pipeline"
)

// streamed asks for a streamed completion (with stream_options.include_usage
// so the last chunk carries the token counts) and assembles it, passing each
// text delta to onText in order from the calling goroutine.
func (m *Model) streamed(ctx context.Context, params oai.ChatCompletionNewParams, onText func(string)) (answer, error) {
	params.StreamOptions = oai.ChatCompletionStreamOptionsParam{IncludeUsage: oai.Bool(true)}
	var res *http.Response
	stream := m.svc.NewStreaming(ctx, params, option.WithResponseInto(&res))
	defer stream.Close()
	var acc accumulator
	for stream.Next() {
		acc.add(stream.Current(), onText)
	}
	if err := stream.Err(); err != nil {
		return answer{}, m.streamFailure(ctx, err)
	}
	if acc.finish == "" && res != nil {
		if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
			return answer{}, fmt.Errorf("%w: asked for a stream, got Content-Type %q and no finish_reason", ErrMalformedResponse, ct)
		}
	}
	return acc.answer()
}

func (m *Model) streamFailure(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var se *ssestream.StreamError
	if errors.As(err, &se) {
		return fmt.Errorf("the stream reported an error: %s", cut(m.redact.String(se.Message), 500))
	}
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	if errors.As(err, &syntax) || errors.As(err, &typ) {
		return fmt.Errorf("%w: a stream chunk is not a valid chunk: %v", ErrMalformedResponse, err)
	}
	return m.failure(ctx, err)
}

// accumulator assembles the first choice of a stream. Tool calls arrive as
// deltas keyed by index: the first delta of a call carries its id and name,
// the following ones pieces of its arguments; parallel calls may interleave.
// (The SDK's ChatCompletionAccumulator does the same for whole completions
// but is more than this needs; this one is small enough to read.)
type accumulator struct {
	text    strings.Builder
	refusal strings.Builder
	finish  string
	calls   map[int64]*wireCall
	args    map[int64]*strings.Builder
	usage   pipeline.Usage
}

func (a *accumulator) add(chunk oai.ChatCompletionChunk, onText func(string)) {
	if chunk.JSON.Usage.Valid() {
		a.usage = pipeline.Usage{InputTokens: chunk.Usage.PromptTokens, OutputTokens: chunk.Usage.CompletionTokens}
	}
	for _, c := range chunk.Choices {
		if c.Index != 0 {
			continue // one choice is asked for (n unset); ignore any other
		}
		if d := c.Delta.Content; d != "" {
			a.text.WriteString(d)
			if onText != nil {
				onText(d)
			}
		}
		a.refusal.WriteString(c.Delta.Refusal)
		for _, tc := range c.Delta.ToolCalls {
			a.addCall(tc)
		}
		if c.FinishReason != "" {
			a.finish = c.FinishReason
		}
	}
}

func (a *accumulator) addCall(d oai.ChatCompletionChunkChoiceDeltaToolCall) {
	if a.calls == nil {
		a.calls = map[int64]*wireCall{}
		a.args = map[int64]*strings.Builder{}
	}
	c, ok := a.calls[d.Index]
	if !ok {
		c = &wireCall{}
		a.calls[d.Index] = c
		a.args[d.Index] = &strings.Builder{}
	}
	// Some compatible servers repeat the id, type and name in every delta of
	// a call; take them once. A name sent in pieces is joined.
	if c.id == "" {
		c.id = d.ID
	}
	if c.typ == "" {
		c.typ = d.Type
	}
	if n := d.Function.Name; n != "" && n != c.name {
		c.name += n
	}
	a.args[d.Index].WriteString(d.Function.Arguments)
}

func (a *accumulator) answer() (answer, error) {
	if a.finish == "" {
		return answer{}, fmt.Errorf("%w: the stream ended before a finish_reason (cut off?)", ErrMalformedResponse)
	}
	out := answer{text: a.text.String(), refusal: a.refusal.String(), finish: a.finish, usage: a.usage}
	indexes := make([]int64, 0, len(a.calls))
	for i := range a.calls {
		indexes = append(indexes, i)
	}
	slices.Sort(indexes)
	for _, i := range indexes {
		c := *a.calls[i]
		c.arguments = a.args[i].String()
		out.calls = append(out.calls, c)
	}
	return out, nil
}
