import type Router from '@koa/router';
import { runSql, sql } from '../db/sql';
import { createRouter } from './router';
import type { ApiDependencies } from './context';

/** One part of a process's readiness beyond PostgreSQL, e.g. the worker's Temporal polling. */
export interface ReadinessCheck {
  readonly name: string;
  /** `state` is shown under `checks`; `reason` is set when the part is not ready. */
  check(): { readonly state: string; readonly reason?: string };
}

/**
 * Liveness (`/healthz`, the process is up) and readiness (`/readyz`, PostgreSQL answers and every extra
 * check is ready). The extra checks are the dependencies' `readinessChecks` unless given: `api` has none, a
 * `worker` and `start` add the worker's Temporal polling.
 */
export function healthRouter(
  deps: ApiDependencies,
  extraChecks: readonly ReadinessCheck[] = deps.readinessChecks ?? [],
): Router {
  const { knex, logger } = deps;
  const router = createRouter();
  router.get('/healthz', function liveness(ctx) {
    ctx.body = { status: 'ok' };
  });
  router.get('/readyz', async function readiness(ctx) {
    const checks: Record<string, string> = {};
    const reasons: string[] = [];
    try {
      await runSql(knex, sql`SELECT 1`);
      checks.database = 'ok';
    } catch (error) {
      logger.warn({ err: error }, 'readiness check: database unavailable');
      checks.database = 'unreachable';
      reasons.push('PostgreSQL did not answer');
    }
    for (const { name, check } of extraChecks) {
      const { state, reason } = check();
      checks[name] = state;
      if (reason) reasons.push(reason);
    }
    if (reasons.length) {
      ctx.status = 503;
      ctx.body = { status: 'unavailable', checks, reason: reasons.join('; ') };
    } else {
      ctx.body = { status: 'ready', checks };
    }
  });
  return router;
}
