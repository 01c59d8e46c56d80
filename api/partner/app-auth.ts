import type { Middleware } from 'koa';
import type { Knex } from 'knex';
import { authenticateApp, partnerOperator, type PartnerApp } from '../../application/access/partner-apps';
import type { OperatorContext } from '../../application/access/audit';
import { InternalApiError } from '../../lib/errors';
import type { AppScope } from '../../lib/vocabulary';
import { refuse, type AuthFailureState } from '../auth-failures';
import { DETAIL } from '../listings/errors';
import type { RequestIdState } from '../request-id';
import type { RequestBudget } from './request-budget';

export interface PartnerState extends AuthFailureState, Partial<RequestIdState> {
  app: PartnerApp;
}

/**
 * X-App-Id / X-App-Key, checked on every request against PostgreSQL (a revoked app is refused on its next request),
 * then the app's request budget. Refusals answer 403 with the listings' words, so one client handles both APIs.
 */
export function requirePartnerApp(knex: Knex, budget: RequestBudget): Middleware<PartnerState> {
  return async function requirePartnerApp(ctx, next) {
    const appId = ctx.get('X-App-Id');
    const appKey = ctx.get('X-App-Key');
    if (!appId || !appKey) {
      refuse(ctx, 'missing_token');
      throw new InternalApiError(403, { detail: DETAIL.notAuthenticated });
    }
    const app = await authenticateApp(knex, appId, appKey);
    if (!app) {
      refuse(ctx, 'invalid_token');
      throw new InternalApiError(403, { detail: DETAIL.authenticationFailed });
    }
    const waitSeconds = budget.take(app.appId);
    if (waitSeconds > 0) {
      throw new InternalApiError(
        429,
        { detail: `Request budget exceeded: try again in ${waitSeconds} s.`, reason: 'over_budget' },
        { 'Retry-After': String(waitSeconds) },
      );
    }
    ctx.state.app = app;
    await next();
  };
}

/** 403 naming `scope` unless the app holds it. */
export function requireAppScope(scope: AppScope): Middleware<PartnerState> {
  return async function requireAppScope(ctx, next) {
    if (!ctx.state.app.scopes.includes(scope)) {
      refuse(ctx, 'missing_scope', ctx.state.app.appId);
      throw new InternalApiError(403, { detail: DETAIL.missingScope(scope), reason: 'missing_scope' });
    }
    await next();
  };
}

/** The app acting in this request, for the audit trail (`app:<app_id>`). */
export const actingApp = (ctx: { state: PartnerState }): OperatorContext =>
  partnerOperator(ctx.state.app, ctx.state.requestId);
