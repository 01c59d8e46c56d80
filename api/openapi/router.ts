import type Router from '@koa/router';
import { createRouter } from '../router';
import type { ApiDependencies } from '../context';
import { openApiDocument } from './document';

/** `GET /openapi.json`: the OpenAPI 3.1 document of every route, and the webhook catalog. */
export function openApiRouter({ config }: ApiDependencies): Router {
  const body = JSON.stringify(openApiDocument(config));
  const router = createRouter();
  router.get('/openapi.json', function openApiDocument(ctx) {
    ctx.type = 'application/json; charset=utf-8';
    ctx.body = body;
  });
  return router;
}
