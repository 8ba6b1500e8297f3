package tracing_test

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/stepwise-run/stepwise/pipeline/tracing"
)

const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

// One test, in this order: a provider installed stays for the process.
func TestStart_carries_the_trace_without_a_provider_and_records_with_one(t *testing.T) {
	ctx, span := tracing.Start(context.Background(), parent, "step", trace.SpanKindConsumer)
	span.End()
	if span.IsRecording() {
		t.Fatal("a span recorded with no provider installed")
	}
	if got := tracing.Traceparent(ctx); got != parent {
		t.Fatalf("Traceparent = %q, want the parent's %q carried on", got, parent)
	}

	rec := tracetest.NewSpanRecorder()
	otel.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)))
	ctx, span = tracing.Start(context.Background(), parent, "step", trace.SpanKindConsumer)
	span.End()
	ended := rec.Ended()
	if len(ended) != 1 || ended[0].Name() != "step" || ended[0].Parent().TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Fatalf("recorded %v, want one span named step under the parent", ended)
	}
	if got := trace.SpanContextFromContext(ctx).SpanID(); got != ended[0].SpanContext().SpanID() {
		t.Fatalf("the context carries span %s, not the one started", got)
	}
}
