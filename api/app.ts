import Koa from 'koa';
import type Router from '@koa/router';
import type { ApiDependencies } from './context';
import { codecRouter } from './codec/router';
import { docsRouter } from './docs/router';
import { healthRouter } from './health';
import { metricsRouter, requestMetrics } from './metrics';
import { internalWebhooksRouter } from './internal/webhooks-router';
import { internalPartnerRouter } from './internal/partner-router';
import { internalOrderingRouter } from './internal/ordering-router';
import { internalErasuresRouter } from './internal/erasures-router';
import { internalAuditRouter } from './internal/audit-router';
import { listingsRouter } from './listings/router';
import { partnerRouter } from './partner/router';
import { portalRouter } from './portal/router';
import { openApiRouter } from './openapi/router';
import { scimRouter } from './scim/router';
import { traceRequests } from './tracing';
import { assignRequestId } from './request-id';
import { countAuthFailures } from './auth-failures';
import { tracingEnabled } from '../lib/tracing';

export type RouterFactory = (deps: ApiDependencies) => Router;

/** Route modules, mounted in this order. Each one answers errors in its own API's format. */
export const API_ROUTERS: readonly RouterFactory[] = [
  healthRouter,
  metricsRouter,
  listingsRouter,
  openApiRouter,
  docsRouter,
  scimRouter,
  internalWebhooksRouter,
  internalOrderingRouter,
  internalPartnerRouter,
  internalErasuresRouter,
  internalAuditRouter,
  // Before the partner API: opening a portal link is the one partner route without the app check.
  portalRouter,
  partnerRouter,
  codecRouter,
];

/**
 * Builds the Koa application (the API's routers unless others are given, as the worker's own port does). Unknown paths
 * (404) and methods a router does not serve (405, set by allowedMethods without a body) answer in DRF's `{"detail"}`
 * shape unless a route module answered itself.
 */
export function createApp(deps: ApiDependencies, routerFactories: readonly RouterFactory[] = API_ROUTERS): Koa {
  const app = new Koa({ proxy: deps.config.TRUST_PROXY });
  app.silent = true;
  // Outermost, so the request's span holds everything it does; absent when tracing is off.
  if (tracingEnabled()) app.use(traceRequests);
  app.use(requestMetrics);
  // Before every answer, errors included, so each response names its request.
  app.use(assignRequestId);
  // Outside every route module's error answer, so it sees the status each refusal was answered with.
  app.use(countAuthFailures(deps.logger));
  app.use(async function answerUnhandledAsJson(ctx, next) {
    try {
      await next();
    } catch (error) {
      deps.logger.error({ err: error, method: ctx.method, path: ctx.path }, 'unhandled request error');
      ctx.status = 500;
      ctx.body = { detail: 'A server error occurred.' };
      return;
    }
    if (ctx.body !== undefined && ctx.body !== null) return;
    // Koa turns a body on an implicit 404 into a 200, so the status is set again explicitly.
    const { status } = ctx;
    if (status === 404) ctx.body = { detail: 'Not found.' };
    else if (status === 405) ctx.body = { detail: `Method "${ctx.method}" not allowed.` };
    ctx.status = status;
  });
  for (const factory of routerFactories) {
    const router = factory(deps);
    app.use(router.routes());
    app.use(router.allowedMethods());
  }
  return app;
}
