// The OpenTelemetry SDK itself, loaded by lib/tracing.ts only when tracing is on. It imports nothing of
// lib/tracing.ts, so the two modules form no cycle.
import { OTLPTraceExporter as OTLPGrpcTraceExporter } from '@opentelemetry/exporter-trace-otlp-grpc';
import { OTLPTraceExporter as OTLPJsonTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as OTLPProtoTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { registerInstrumentations } from '@opentelemetry/instrumentation';
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg';
import { envDetectorSync, Resource } from '@opentelemetry/resources';
import {
  BatchSpanProcessor,
  ConsoleSpanExporter,
  type SpanExporter,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';

/** The service name on every span unless OTEL_SERVICE_NAME (or OTEL_RESOURCE_ATTRIBUTES) names another. */
const DEFAULT_SERVICE_NAME = 'partner-integration-service';

/** The running SDK, as lib/tracing.ts keeps it. */
export interface ActiveTracing {
  readonly provider: NodeTracerProvider;
  /** Also ends the spans the workflows send through the worker's sink. */
  readonly processor: SpanProcessor;
  readonly resource: Resource;
}

/** The exporter the OTEL_* variables name (lib/tracing.ts reads them). */
export type ExporterChoice =
  { readonly kind: 'console' } | { readonly kind: 'otlp'; readonly protocol: 'http/protobuf' | 'http/json' | 'grpc' };

function createExporter(choice: ExporterChoice): SpanExporter {
  if (choice.kind === 'console') return new ConsoleSpanExporter();
  // Each exporter reads its endpoint, headers, timeout and compression from the OTEL_EXPORTER_OTLP_* variables.
  if (choice.protocol === 'grpc') return new OTLPGrpcTraceExporter();
  return choice.protocol === 'http/json' ? new OTLPJsonTraceExporter() : new OTLPProtoTraceExporter();
}

/** service.name and the rest: defaults, then OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES. */
function resourceFromEnv(): Resource {
  const detected = envDetectorSync.detect();
  return new Resource({
    ...Resource.default().attributes,
    'service.name': DEFAULT_SERVICE_NAME,
    ...detected.attributes,
  });
}

/** Registers the tracer provider globally, with its exporter and the pg instrumentation. */
export function createTracing(choice: ExporterChoice): ActiveTracing {
  const resource = resourceFromEnv();
  // Batched: spans leave in the background (OTEL_BSP_* tune it); the sampler follows OTEL_TRACES_SAMPLER.
  const processor = new BatchSpanProcessor(createExporter(choice));
  const provider = new NodeTracerProvider({ resource, spanProcessors: [processor] });
  // AsyncLocalStorage context, W3C traceparent and baggage (OTEL_PROPAGATORS).
  provider.register();
  // Statements only inside a trace; their text has bind parameters ($1), never the values.
  registerInstrumentations({
    tracerProvider: provider,
    instrumentations: [new PgInstrumentation({ requireParentSpan: true })],
  });
  return { provider, processor, resource };
}
