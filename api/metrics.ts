import type Router from '@koa/router';
import { createRouter } from './router';
import type { Middleware } from 'koa';
import { httpRequestDuration, metricsRegistry, metricsText } from '../lib/metrics';

/** Times every request; the route label is the matched pattern, or `unmatched`. */
export const requestMetrics: Middleware = async function requestMetrics(ctx, next) {
  const end = httpRequestDuration.startTimer();
  try {
    await next();
  } finally {
    const route = (ctx as { _matchedRoute?: unknown })._matchedRoute;
    end({ method: ctx.method, route: typeof route === 'string' ? route : 'unmatched', status: String(ctx.status) });
  }
};

/**
 * `GET /metrics` in the Prometheus text format, unauthenticated like /healthz (expose it on internal networks only).
 */
export function metricsRouter(): Router {
  const router = createRouter();
  router.get('/metrics', async function metrics(ctx) {
    ctx.type = metricsRegistry.contentType;
    ctx.body = await metricsText();
  });
  return router;
}
