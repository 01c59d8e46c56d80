// Workflow interceptors for OpenTelemetry, bundled with the workflow code (worker/bundle.ts). They trace only
// the runs whose start carried a trace context, which a client traces only when tracing is on: an untraced
// start, and every history written before them, replays exactly as without them.
import { context, trace, SpanStatusCode, type Context, type Link } from '@opentelemetry/api';
import {
  extractContextFromHeaders,
  TRACE_HEADER,
  UPDATE_ID_ATTR_KEY,
} from '@temporalio/interceptors-opentelemetry/lib/instrumentation';
import {
  OpenTelemetryInboundInterceptor,
  OpenTelemetryInternalsInterceptor,
  OpenTelemetryOutboundInterceptor,
  SpanName,
  SPAN_DELIMITER,
} from '@temporalio/interceptors-opentelemetry/lib/workflow';
import type {
  Headers,
  UpdateInput,
  WorkflowInboundCallsInterceptor,
  WorkflowInterceptors,
  WorkflowInternalsInterceptor,
  WorkflowOutboundCallsInterceptor,
} from '@temporalio/workflow';

/** One run's tracing: set by `execute` when the start carried a trace context. */
interface RunTracing {
  readonly inbound: OpenTelemetryInboundInterceptor;
  readonly outbound: OpenTelemetryOutboundInterceptor;
  readonly internals: OpenTelemetryInternalsInterceptor;
  /** The context of the run's span, the parent of its update handlers. */
  runContext: Context;
}

export const interceptors = (): WorkflowInterceptors => {
  let run: RunTracing | undefined;
  const inbound: WorkflowInboundCallsInterceptor = {
    execute(input, next) {
      if (!(TRACE_HEADER in input.headers)) return next(input);
      const traced: RunTracing = {
        inbound: new OpenTelemetryInboundInterceptor(),
        outbound: new OpenTelemetryOutboundInterceptor(),
        internals: new OpenTelemetryInternalsInterceptor(),
        runContext: context.active(),
      };
      run = traced;
      return traced.inbound.execute(input, (started) => {
        traced.runContext = context.active();
        return next(started);
      });
    },
    handleSignal: (input, next) => (run ? run.inbound.handleSignal(input, next) : next(input)),
    handleQuery: (input, next) => (run ? run.inbound.handleQuery(input, next) : next(input)),
    // An operator's update (retry-now) comes from another request's trace: its spans go into the delivery's
    // trace under the run's span, linked to the operator's request.
    validateUpdate(input, next) {
      if (!run) return next(input);
      return inUpdateSpan(run, SpanName.WORKFLOW_VALIDATE_UPDATE, input, () => next(input));
    },
    handleUpdate(input, next) {
      if (!run) return next(input);
      return inUpdateSpan(run, SpanName.WORKFLOW_HANDLE_UPDATE, input, () => next(input));
    },
  };
  const outbound: WorkflowOutboundCallsInterceptor = {
    scheduleActivity: (input, next) => (run ? run.outbound.scheduleActivity(input, next) : next(input)),
    scheduleLocalActivity: (input, next) => (run ? run.outbound.scheduleLocalActivity(input, next) : next(input)),
    startChildWorkflowExecution: (input, next) =>
      run ? run.outbound.startChildWorkflowExecution(input, next) : next(input),
    continueAsNew: (input, next) => (run ? run.outbound.continueAsNew(input, next) : next(input)),
    getLogAttributes: (input, next) => (run ? run.outbound.getLogAttributes(input, next) : next(input)),
  };
  const internals: WorkflowInternalsInterceptor = {
    // The SDK calls dispose without awaiting it; OpenTelemetry's ends the run's spans asynchronously.
    dispose: (input, next) => {
      if (run) void run.internals.dispose(input, next);
      else next(input);
    },
  };
  return { inbound: [inbound], outbound: [outbound], internals: [internals] };
};

/** Runs an update's validator or handler in a span under the run's span, linked to the caller's span. */
function inUpdateSpan<T>(run: RunTracing, kind: SpanName, input: UpdateInput, work: () => T): T {
  // The OpenTelemetry interceptors registered the workflow's tracer provider when the run started.
  const tracer = trace.getTracer('@temporalio/interceptor-workflow');
  const links = callerLinks(input.headers);
  return context.with(run.runContext, () =>
    tracer.startActiveSpan(
      `${kind}${SPAN_DELIMITER}${input.name}`,
      { links, attributes: { [UPDATE_ID_ATTR_KEY]: input.updateId } },
      (span) => {
        const fail = (error: unknown) => {
          span.setStatus({
            code: SpanStatusCode.ERROR,
            message: error instanceof Error ? error.message : String(error),
          });
          span.end();
          throw error;
        };
        let result: T;
        try {
          result = work();
        } catch (error) {
          return fail(error);
        }
        if (!(result instanceof Promise)) {
          span.setStatus({ code: SpanStatusCode.OK });
          span.end();
          return result;
        }
        return result.then((value: unknown) => {
          span.setStatus({ code: SpanStatusCode.OK });
          span.end();
          return value;
        }, fail) as T;
      },
    ),
  );
}

function callerLinks(headers: Headers): Link[] {
  const caller = extractContextFromHeaders(headers);
  const spanContext = caller && trace.getSpanContext(caller);
  return spanContext ? [{ context: spanContext }] : [];
}
