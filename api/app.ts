import Koa from 'koa';
import type Router from '@koa/router';
import type { ApiDependencies } from './context';
import { healthRouter } from './health';
import { internalWebhooksRouter } from './internal/webhooks-router';
import { listingsRouter } from './listings/router';
import { openApiRouter } from './openapi/router';
import { scimRouter } from './scim/router';

export type RouterFactory = (deps: ApiDependencies) => Router;

/** Route modules, mounted in this order. Each one answers errors in its own API's format. */
const routerFactories: RouterFactory[] = [healthRouter, listingsRouter, openApiRouter, scimRouter, internalWebhooksRouter];

/** Builds the Koa application. Unknown paths and unexpected errors answer in DRF's `{"detail"}` shape. */
export function createApp(deps: ApiDependencies): Koa {
  const app = new Koa({ proxy: deps.config.TRUST_PROXY });
  app.silent = true;
  app.use(async (ctx, next) => {
    try {
      await next();
    } catch (error) {
      deps.logger.error({ err: error, method: ctx.method, path: ctx.path }, 'unhandled request error');
      ctx.status = 500;
      ctx.body = { detail: 'A server error occurred.' };
    }
  });
  for (const factory of routerFactories) {
    const router = factory(deps);
    app.use(router.routes());
    app.use(router.allowedMethods());
  }
  app.use((ctx) => {
    if (ctx.body === undefined && ctx.status === 404) {
      ctx.status = 404;
      ctx.body = { detail: 'Not found.' };
    }
  });
  return app;
}
