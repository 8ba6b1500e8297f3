// Package tracing is stepwise's OpenTelemetry tracing: one trace per run,
// from its creation at the gateway through every step, tool call and
// decision, in every process. The run's trace context is kept with the run
// in Redis (Run.Trace, a W3C traceparent) and travels in every message's
// "traceparent" header, so a step requested again by a sweeper in another
// process still joins its run's trace.
//
// Off by default. The standard OpenTelemetry variables turn it on and
// configure it: OTEL_TRACES_EXPORTER (otlp, console, none),
// OTEL_EXPORTER_OTLP_ENDPOINT / OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
// OTEL_EXPORTER_OTLP_PROTOCOL (http/protobuf, grpc), OTEL_SERVICE_NAME,
// OTEL_RESOURCE_ATTRIBUTES, OTEL_TRACES_SAMPLER and the rest.
package tracing
