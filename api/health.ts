import Router from '@koa/router';
import type { ApiDependencies } from './context';

/** Liveness (`/healthz`, the process is up) and readiness (`/readyz`, PostgreSQL answers). */
export function healthRouter({ knex, logger }: ApiDependencies): Router {
  const router = new Router();
  router.get('/healthz', function liveness(ctx) {
    ctx.body = { status: 'ok' };
  });
  router.get('/readyz', async function readiness(ctx) {
    try {
      await knex.raw('SELECT 1');
      ctx.body = { status: 'ready', checks: { database: 'ok' } };
    } catch (error) {
      logger.warn({ err: error }, 'readiness check: database unavailable');
      ctx.status = 503;
      ctx.body = { status: 'unavailable', checks: { database: 'unreachable' }, reason: 'PostgreSQL did not answer' };
    }
  });
  return router;
}
