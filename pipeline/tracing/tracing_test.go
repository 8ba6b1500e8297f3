package tracing_test

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/stepwise-run/stepwise/pipeline/tracing"
)

const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

// One test, in this order: a provider installed stays for the process.
// Without a provider a span is not described (its name and attributes are
// not built); with one it is.
func TestStart_carries_the_trace_without_a_provider_and_records_with_one(t *testing.T) {
	described := 0
	step := func() (string, []attribute.KeyValue) {
		described++
		return "step", []attribute.KeyValue{attribute.Int("stepwise.step", 3)}
	}
	ctx, span := tracing.Start(context.Background(), parent, trace.SpanKindConsumer, step)
	span.End()
	if span.IsRecording() || described != 0 {
		t.Fatalf("with no provider installed: recording %v, described %d times", span.IsRecording(), described)
	}
	if got := tracing.Traceparent(ctx); got != parent {
		t.Fatalf("Traceparent = %q, want the parent's %q carried on", got, parent)
	}

	rec := tracetest.NewSpanRecorder()
	otel.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)))
	ctx, span = tracing.Start(context.Background(), parent, trace.SpanKindConsumer, step)
	span.End()
	ended := rec.Ended()
	if len(ended) != 1 || ended[0].Name() != "step" || ended[0].Parent().TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" ||
		len(ended[0].Attributes()) != 1 || described != 1 {
		t.Fatalf("recorded %v (described %d times), want one span named step with its attribute under the parent", ended, described)
	}
	if got := trace.SpanContextFromContext(ctx).SpanID(); got != ended[0].SpanContext().SpanID() {
		t.Fatalf("the context carries span %s, not the one started", got)
	}
}
