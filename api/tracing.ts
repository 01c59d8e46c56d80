import { context, propagation, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import type { Middleware } from 'koa';
import { SERVICE_TRACER } from '../lib/tracing';

/**
 * One server span per request, continuing the caller's W3C `traceparent`; everything the request does (its
 * SQL, a workflow start) is under it. Only the method, the route template and the status are recorded: never
 * headers (Authorization, app keys), the query string or bodies. Mounted only when tracing is on.
 */
export const traceRequests: Middleware = async function traceRequests(ctx, next) {
  const parent = propagation.extract(context.active(), ctx.headers);
  const span = trace
    .getTracer(SERVICE_TRACER)
    .startSpan(ctx.method, { kind: SpanKind.SERVER, attributes: { 'http.request.method': ctx.method } }, parent);
  try {
    await context.with(trace.setSpan(parent, span), next);
  } finally {
    // Set by @koa/router on the route that answered: a template such as /internal/v1/webhooks/:webhook_id/retry-now.
    const route = (ctx as { _matchedRoute?: unknown })._matchedRoute;
    if (typeof route === 'string') {
      span.updateName(`${ctx.method} ${route}`);
      span.setAttribute('http.route', route);
    }
    span.setAttribute('http.response.status_code', ctx.status);
    if (ctx.status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
    span.end();
  }
};
