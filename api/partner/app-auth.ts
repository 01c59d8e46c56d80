import type { Context, Middleware } from 'koa';
import type { Knex } from 'knex';
import { authenticateApp, partnerOperator, type PartnerApp } from '../../application/access/partner-apps';
import { authenticatePortalSession, type PortalSession } from '../../application/access/portal-sessions';
import type { OperatorContext } from '../../application/access/audit';
import { InternalApiError } from '../../lib/errors';
import type { AppScope } from '../../lib/vocabulary';
import { refuse, type AuthFailureState } from '../auth-failures';
import { DETAIL } from '../listings/errors';
import type { RequestIdState } from '../request-id';
import type { RequestBudget } from './request-budget';

export interface PartnerState extends AuthFailureState, Partial<RequestIdState> {
  app: PartnerApp;
  /** Set when the request came from the portal, with its session cookie rather than the app's key. */
  portalSession?: PortalSession;
}

/** The portal's session cookie (HttpOnly) and its double-submit token (readable by the page, sent back in a header). */
export const PORTAL_SESSION_COOKIE = 'portal_session';
export const PORTAL_CSRF_COOKIE = 'portal_csrf';
export const PORTAL_CSRF_HEADER = 'X-CSRF-Token';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** A portal session's app; its writes must carry the session's token in X-CSRF-Token, as Django's CSRF check asks. */
async function portalApp(knex: Knex, ctx: Context & { state: PartnerState }, cookie: string): Promise<PartnerApp> {
  const session = await authenticatePortalSession(knex, cookie);
  if (!session) {
    refuse(ctx, 'invalid_token');
    throw new InternalApiError(403, { detail: DETAIL.sessionEnded, reason: 'session_ended' });
  }
  if (!SAFE_METHODS.has(ctx.method) && !session.csrfMatches(ctx.get(PORTAL_CSRF_HEADER))) {
    refuse(ctx, 'cross_site', session.app.appId);
    throw new InternalApiError(403, { detail: DETAIL.csrfFailed, reason: 'csrf_failed' });
  }
  ctx.state.portalSession = session;
  return session.app;
}

/** The app of a request with X-App-Id and X-App-Key, or 403. */
async function keyedApp(knex: Knex, ctx: Context & { state: PartnerState }): Promise<PartnerApp> {
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
  return app;
}

/**
 * X-App-Id / X-App-Key, or without them the portal's session cookie, checked on every request against PostgreSQL (a
 * revoked app is refused on its next request), then the app's request budget. Refusals answer 403 with the
 * listings' words, so one client handles both APIs.
 */
export function requirePartnerApp(knex: Knex, budget: RequestBudget): Middleware<PartnerState> {
  return async function requirePartnerApp(ctx, next) {
    const cookie = ctx.cookies.get(PORTAL_SESSION_COOKIE);
    const keyless = !ctx.get('X-App-Id') && !ctx.get('X-App-Key');
    const app = cookie && keyless ? await portalApp(knex, ctx, cookie) : await keyedApp(knex, ctx);
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
