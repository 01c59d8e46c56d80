// OpenTelemetry tracing of the service, configured by the standard OTEL_* variables (docs/observability.md).
// Off unless an exporter or an OTLP endpoint is named: then no provider is registered, and every span the code
// asks for is the API's no-op.
import { OTLPTraceExporter as OTLPGrpcTraceExporter } from '@opentelemetry/exporter-trace-otlp-grpc';
import { OTLPTraceExporter as OTLPJsonTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as OTLPProtoTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { registerInstrumentations } from '@opentelemetry/instrumentation';
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg';
import { envDetectorSync, Resource } from '@opentelemetry/resources';
import { BatchSpanProcessor, ConsoleSpanExporter, type SpanExporter, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { ConfigError } from './config';

/** The service name on every span unless OTEL_SERVICE_NAME (or OTEL_RESOURCE_ATTRIBUTES) names another. */
export const DEFAULT_SERVICE_NAME = 'partner-integration-service';

/** The instrumentation scope of the service's own spans (the API's requests, the partner POST). */
export const SERVICE_TRACER = 'partner-integration-service';

interface ActiveTracing {
  readonly provider: NodeTracerProvider;
  /** Also ends the spans the workflows send through the worker's sink. */
  readonly processor: SpanProcessor;
  readonly resource: Resource;
}

let active: ActiveTracing | undefined;

const PROTOCOLS = ['http/protobuf', 'http/json', 'grpc'] as const;
type Protocol = (typeof PROTOCOLS)[number];

/** The exporter OTEL_TRACES_EXPORTER names, or undefined when tracing is off. Throws ConfigError on a bad value. */
function exporterFromEnv(env: NodeJS.ProcessEnv): SpanExporter | undefined {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return undefined;
  const named = env.OTEL_TRACES_EXPORTER?.trim().toLowerCase();
  const endpoint = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || env.OTEL_EXPORTER_OTLP_ENDPOINT;
  // Nothing named and no endpoint: off, so a service nobody set up for tracing sends nothing anywhere.
  if (!named && !endpoint) return undefined;
  switch (named ?? 'otlp') {
    case 'none':
      return undefined;
    case 'console':
      return new ConsoleSpanExporter();
    case 'otlp':
      break;
    default:
      throw new ConfigError(`Invalid configuration: OTEL_TRACES_EXPORTER must be otlp, console or none (got "${named}")`);
  }
  const variable = env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ? 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL' : 'OTEL_EXPORTER_OTLP_PROTOCOL';
  const protocol = (env[variable]?.trim() || 'http/protobuf') as Protocol;
  if (!PROTOCOLS.includes(protocol)) throw new ConfigError(`Invalid configuration: ${variable} must be http/protobuf, http/json or grpc (got "${protocol}")`);
  // Each exporter reads its endpoint, headers, timeout and compression from the OTEL_EXPORTER_OTLP_* variables.
  if (protocol === 'grpc') return new OTLPGrpcTraceExporter();
  return protocol === 'http/json' ? new OTLPJsonTraceExporter() : new OTLPProtoTraceExporter();
}

/** service.name and the rest: defaults, then OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES. */
function resourceFromEnv(): Resource {
  const detected = envDetectorSync.detect();
  return new Resource({ ...Resource.default().attributes, 'service.name': DEFAULT_SERVICE_NAME, ...detected.attributes });
}

/**
 * Starts tracing when the environment asks for it; returns whether it is on. Must run before anything loads
 * `pg` (cli/main.ts loads it first), since instrumentation-pg patches pg as it is required. Throws
 * ConfigError for a bad OTEL_* value. Later calls do nothing.
 */
export function startTracing(env: NodeJS.ProcessEnv = process.env): boolean {
  if (active) return true;
  const exporter = exporterFromEnv(env);
  if (!exporter) return false;
  const resource = resourceFromEnv();
  // Batched: spans leave in the background (OTEL_BSP_* tune it); the sampler follows OTEL_TRACES_SAMPLER.
  const processor = new BatchSpanProcessor(exporter);
  const provider = new NodeTracerProvider({ resource, spanProcessors: [processor] });
  // AsyncLocalStorage context, W3C traceparent and baggage (OTEL_PROPAGATORS).
  provider.register();
  // Statements only inside a trace; their text has bind parameters ($1), never the values.
  registerInstrumentations({ tracerProvider: provider, instrumentations: [new PgInstrumentation({ requireParentSpan: true })] });
  active = { provider, processor, resource };
  return true;
}

export const tracingEnabled = (): boolean => active !== undefined;

/** Where the worker sends the spans its workflows end: the provider's own processor and resource. */
export const workflowSpanTarget = (): Pick<ActiveTracing, 'processor' | 'resource'> | undefined => active;

/** Sends the spans still buffered; one-shot commands call it before they exit. */
export async function flushTracing(): Promise<void> {
  await active?.provider.forceFlush();
}

/** Flushes and stops tracing: the last step of a graceful shutdown. */
export async function shutdownTracing(): Promise<void> {
  const stopping = active;
  active = undefined;
  await stopping?.provider.shutdown();
}
