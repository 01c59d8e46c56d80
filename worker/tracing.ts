import {
  makeWorkflowExporter,
  OpenTelemetryActivityInboundInterceptor,
  OpenTelemetryActivityOutboundInterceptor,
} from '@temporalio/interceptors-opentelemetry/lib/worker';
import type { OpenTelemetrySinks } from '@temporalio/interceptors-opentelemetry/lib/workflow';
import type { InjectedSinks, WorkerOptions } from '@temporalio/worker';
import { workflowSpanTarget } from '../lib/tracing';

/**
 * The worker's part of tracing: activity spans under the span that scheduled them, and the sink through which
 * the workflows (in their sandbox) hand over their spans. With tracing off the sink drops them: a run that a
 * traced client started still finds it. The workflow interceptors are in the bundle (worker/bundle.ts).
 */
export function workerTracing(): Pick<WorkerOptions, 'sinks'> & {
  activityInterceptors: NonNullable<NonNullable<WorkerOptions['interceptors']>['activity']>;
} {
  const target = workflowSpanTarget();
  const sinks: InjectedSinks<OpenTelemetrySinks> = {
    exporter: target ? makeWorkflowExporter(target.processor, target.resource) : { export: { fn: () => undefined } },
  };
  if (!target) return { sinks, activityInterceptors: [] };
  return {
    sinks,
    activityInterceptors: [
      (ctx) => ({
        inbound: new OpenTelemetryActivityInboundInterceptor(ctx),
        outbound: new OpenTelemetryActivityOutboundInterceptor(ctx),
      }),
    ],
  };
}
