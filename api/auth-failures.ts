import type { Context, Middleware } from 'koa';
import type { Logger } from '../lib/logger';
import { authFailures } from '../lib/metrics';
import type { AuthFailureReason } from '../lib/vocabulary';
import type { RequestIdState } from './request-id';

// Every 401 and 403 of an auth check is counted and logged here, once the request is answered: the check only
// says why (refuse), so no API's error format has to know about metrics or logs.

export interface AuthFailureState {
  authFailure?: { readonly reason: AuthFailureReason; readonly actor?: string };
}

/** Notes why the request is refused; `actor` is a named token's name (never its secret) when it is known. */
export function refuse(ctx: { state: AuthFailureState }, reason: AuthFailureReason, actor?: string): void {
  ctx.state.authFailure = { reason, ...(actor !== undefined && { actor }) };
}

type MatchedLayer = { readonly path: unknown; readonly name?: string | null; readonly methods: readonly string[] };

/**
 * The pattern of the route the request matched (its name when the path is a RegExp), or `unmatched`: never the
 * raw path. From the matched layers, not _matchedRoute, which is a router.use layer's path while that one runs.
 */
export function routeLabel(ctx: Context): string {
  // The first route of the method is the one that answers (a later catch-all such as SCIM's only falls back).
  const route = ((ctx as { matched?: MatchedLayer[] }).matched ?? []).find((layer) =>
    layer.methods.includes(ctx.method),
  );
  if (typeof route?.path === 'string') return route.path;
  return route?.name ?? 'unmatched';
}

/** Counts (partner_service_auth_failures_total) and logs, at warn, each request an auth check refused. */
export function countAuthFailures(logger: Logger): Middleware<AuthFailureState & Partial<RequestIdState>> {
  return async function countAuthFailures(ctx, next) {
    try {
      await next();
    } finally {
      const failure = ctx.state.authFailure;
      if (failure && (ctx.status === 401 || ctx.status === 403)) {
        const route = routeLabel(ctx);
        authFailures.inc({ reason: failure.reason, route });
        logger.warn(
          {
            reason: failure.reason,
            route,
            method: ctx.method,
            status: ctx.status,
            request_id: ctx.state.requestId,
            actor: failure.actor,
          },
          'request refused by an auth check',
        );
      }
    }
  };
}
