package tracing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"

	"github.com/ThreeDotsLabs/watermill/message"
	"go.opentelemetry.io/contrib/exporters/autoexport"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/stepwise-run/stepwise/topics"
)

// Header is the message metadata (Kafka header) that carries a span's W3C
// trace context.
const Header = topics.MetadataTrace

var propagator = propagation.TraceContext{}

// tracer is the global provider's, taken at its first use and kept: one
// taken before Setup installs a provider delegates to that provider from
// then on (otel's global package does so), and taking it at every span
// cost a lock and a map lookup (1.4 % of a worker's CPU on ten-steps).
var tracer = sync.OnceValue(func() trace.Tracer { return otel.Tracer("github.com/stepwise-run/stepwise") })

// Enabled reports whether the environment asks for traces: an exporter
// named (OTEL_TRACES_EXPORTER, other than none) or an OTLP endpoint set.
func Enabled() bool {
	if e := os.Getenv("OTEL_TRACES_EXPORTER"); e != "" {
		return e != "none"
	}
	return os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// Setup installs the global tracer provider the environment describes,
// for a program named service (unless OTEL_SERVICE_NAME names it). With
// tracing off it installs nothing and every span is a no-op. shutdown
// flushes what is buffered.
func Setup(ctx context.Context, service string) (shutdown func(context.Context) error, err error) {
	if !Enabled() {
		return func(context.Context) error { return nil }, nil
	}
	exp, err := autoexport.NewSpanExporter(ctx)
	if err != nil {
		return nil, fmt.Errorf("tracing: %w", err)
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(semconv.ServiceName(service)))
	if err != nil {
		return nil, fmt.Errorf("tracing: %w", err)
	}
	if env, err := resource.New(ctx, resource.WithFromEnv()); err == nil {
		res, _ = resource.Merge(res, env) // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagator)
	return tp.Shutdown, nil
}

// Traceparent is the W3C trace context of ctx's span, "" when it has none.
func Traceparent(ctx context.Context) string {
	c := propagation.MapCarrier{}
	propagator.Inject(ctx, c)
	return c[Header]
}

// within returns ctx with the remote span of traceparent as its parent
// (ctx itself when traceparent is empty or invalid).
func within(ctx context.Context, traceparent string) context.Context {
	if traceparent == "" {
		return ctx
	}
	return propagator.Extract(ctx, propagation.MapCarrier{Header: traceparent})
}

// untraced is the global tracer provider as this package found it: otel's
// default, until a provider is installed (by Setup, or by a program that
// embeds stepwise). While it is the one in place no span is recorded
// anywhere, and Start makes none: a no-op span of the default provider
// cost 3 % of a worker's CPU on ten-steps.
var untraced = otel.GetTracerProvider()

// Start starts a span, a child of traceparent's span (of ctx's when
// traceparent is empty), named and described by describe. With no tracer
// provider installed it returns that parent span, which records nothing
// but carries the trace on (Traceparent), and does not call describe: the
// name and attributes of a step's spans, built for nothing, were about a
// kilobyte of allocation a step. Add attributes after the start only when
// the span IsRecording, for the same reason.
func Start(ctx context.Context, traceparent string, kind trace.SpanKind, describe func() (name string, attrs []attribute.KeyValue)) (context.Context, trace.Span) {
	ctx = within(ctx, traceparent)
	if otel.GetTracerProvider() == untraced {
		return ctx, trace.SpanFromContext(ctx)
	}
	name, attrs := describe()
	return tracer().Start(ctx, name, trace.WithSpanKind(kind), trace.WithAttributes(attrs...))
}

// StartRun starts the root span of a run's trace, linked to ctx's span (the
// request that created it, which may have created many).
func StartRun(ctx context.Context, runID string) (context.Context, trace.Span) {
	opts := []trace.SpanStartOption{trace.WithNewRoot(), trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(RunID(runID))}
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: sc}))
	}
	return tracer().Start(ctx, "create run", opts...)
}

// Log returns log with the trace_id of span, when it is traced.
func Log(log *slog.Logger, span trace.Span) *slog.Logger {
	if sc := span.SpanContext(); sc.IsValid() {
		return log.With("trace_id", sc.TraceID().String())
	}
	return log
}

// FromMessage is the trace context a message carries.
func FromMessage(msg *message.Message) string { return msg.Metadata.Get(Header) }

// Fail records err on span, unless it is nil.
func Fail(span trace.Span, err error) {
	if err == nil || errors.Is(err, context.Canceled) {
		return
	}
	span.RecordError(err)
	span.SetStatus(codes.Error, err.Error())
}

// Attribute keys of stepwise's spans, beside the GenAI semantic
// conventions' (gen_ai.*).
var (
	RunID  = attribute.Key("stepwise.run_id").String
	Step   = attribute.Key("stepwise.step").Int
	CallID = attribute.Key("stepwise.call_id").String
	Agent  = attribute.Key("stepwise.agent").String
)
