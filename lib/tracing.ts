// OpenTelemetry tracing of the service, configured by the standard OTEL_* variables (docs/observability.md).
// Off unless an exporter or an OTLP endpoint is named: then the SDK is not even loaded, no provider is
// registered, and every span the code asks for is the API's no-op.
// Type-only imports of the SDK module: erased at run time, so nothing loads it but startTracing's require.
import type { ActiveTracing, ExporterChoice } from './tracing-sdk';
import { ConfigError } from './errors';

/** The instrumentation scope of the service's own spans (the API's requests, the partner POST). */
export const SERVICE_TRACER = 'partner-integration-service';

let active: ActiveTracing | undefined;

/** The exporter the environment names, or undefined when tracing is off. Throws ConfigError on a bad value. */
function exporterFromEnv(env: NodeJS.ProcessEnv): ExporterChoice | undefined {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return undefined;
  const named = env.OTEL_TRACES_EXPORTER?.trim().toLowerCase();
  const endpoint = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || env.OTEL_EXPORTER_OTLP_ENDPOINT;
  // Nothing named and no endpoint: off, so a service nobody set up for tracing sends nothing anywhere.
  if (!named && !endpoint) return undefined;
  switch (named ?? 'otlp') {
    case 'none':
      return undefined;
    case 'console':
      return { kind: 'console' };
    case 'otlp':
      break;
    default:
      throw new ConfigError(
        `Invalid configuration: OTEL_TRACES_EXPORTER must be otlp, console or none (got "${named}")`,
      );
  }
  const variable = env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL
    ? 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL'
    : 'OTEL_EXPORTER_OTLP_PROTOCOL';
  const protocol = env[variable]?.trim() || 'http/protobuf';
  if (protocol !== 'http/protobuf' && protocol !== 'http/json' && protocol !== 'grpc') {
    throw new ConfigError(
      `Invalid configuration: ${variable} must be http/protobuf, http/json or grpc (got "${protocol}")`,
    );
  }
  return { kind: 'otlp', protocol };
}

/**
 * Starts tracing when the environment asks for it; returns whether it is on. Must run before anything loads
 * `pg` (cli/main.ts loads it first), since instrumentation-pg patches pg as it is required. Throws
 * ConfigError for a bad OTEL_* value. Later calls do nothing.
 */
export function startTracing(env: NodeJS.ProcessEnv = process.env): boolean {
  if (active) return true;
  const choice = exporterFromEnv(env);
  if (!choice) return false;
  // Required here, not imported: the SDK and its exporters add about 140 ms to every start.
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded only when tracing is on
  const { createTracing } = require('./tracing-sdk') as typeof import('./tracing-sdk');
  active = createTracing(choice);
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
