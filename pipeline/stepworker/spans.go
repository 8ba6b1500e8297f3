package stepworker

import (
	"context"
	"encoding/json"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	oteltrace "go.opentelemetry.io/otel/trace"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/model"
	"github.com/stepwise-run/stepwise/pipeline/tracing"
	"github.com/stepwise-run/stepwise/pipeline/versions"
)

// The spans of a step (package tracing): the step, its inference with the
// OpenTelemetry GenAI attributes, and ToolGate with what it decided,
// parking included.

// inferSpan runs the inference in a span named as the GenAI conventions
// name it ("chat <model>").
func (w *Worker) inferSpan(ctx context.Context, run pipeline.Run, mdl model.Model, req model.Request) (model.Response, error) {
	ctx, span := tracing.Start(ctx, "", oteltrace.SpanKindClient, func() (string, []attribute.KeyValue) {
		key := w.models.keyOf(run)
		provider, name := splitModelKey(key)
		return "chat " + key, []attribute.KeyValue{attribute.String("gen_ai.operation.name", "chat"), attribute.String("gen_ai.provider.name", provider),
			attribute.String("gen_ai.request.model", name), tracing.RunID(run.ID), tracing.Step(run.Step)}
	})
	defer span.End()
	resp, err := mdl.Infer(ctx, req)
	tracing.Fail(span, err)
	if err == nil && span.IsRecording() {
		span.SetAttributes(attribute.Int64("gen_ai.usage.input_tokens", resp.Usage.InputTokens),
			attribute.Int64("gen_ai.usage.output_tokens", resp.Usage.OutputTokens),
			attribute.Int("stepwise.tool_calls", len(resp.ToolCalls)))
	}
	return resp, err
}

// splitModelKey splits a model key ("openai:gpt-4o-mini", "script") into
// provider and model name.
func splitModelKey(key string) (provider, name string) {
	if p, n, ok := strings.Cut(key, ":"); ok {
		return p, n
	}
	return key, key
}

// gateSpan runs ToolGate in a span that records, per call, what it
// decided (an event per call; a parked call's ticket and reason).
func (w *Worker) gateSpan(ctx context.Context, ph *phases, run pipeline.Run, ver *versions.Version, params map[string]json.RawMessage, calls []pipeline.ToolCall) ([]pipeline.ToolCall, error) {
	ctx, span := tracing.Start(ctx, "", oteltrace.SpanKindInternal, func() (string, []attribute.KeyValue) {
		return "tool_gate", []attribute.KeyValue{tracing.RunID(run.ID), tracing.Step(run.Step)}
	})
	defer span.End()
	out, err := w.gate(ctx, ph, run, ver, params, calls, w.now())
	tracing.Fail(span, err)
	if !span.IsRecording() {
		return out, err
	}
	for _, c := range out {
		attrs := []attribute.KeyValue{tracing.CallID(c.ID), attribute.String("gen_ai.tool.name", c.Tool),
			attribute.String("stepwise.call.status", string(c.Status)), attribute.String("stepwise.gate", string(c.Gate))}
		if c.Parking != nil {
			attrs = append(attrs, attribute.String("stepwise.parking.ticket", c.Parking.Ticket), attribute.String("stepwise.parking.reason", c.Parking.Reason))
		}
		span.AddEvent("tool_call", oteltrace.WithAttributes(attrs...))
	}
	return out, err
}
