import type { Context } from 'koa';
import { closePortalSession, createPortalLink, portalLinkUrl } from '../../application/access/portal-sessions';
import { InternalApiError } from '../../lib/errors';
import { jsonBody } from '../internal/json-body';
import { requestOrigin } from '../request-origin';
import { actingApp, PORTAL_CSRF_COOKIE, PORTAL_SESSION_COOKIE, type PartnerState } from './app-auth';
import type { PartnerRoutes } from './routes';

/** Removes the portal's cookies from the browser. */
export function clearPortalCookies(ctx: Context): void {
  for (const name of [PORTAL_SESSION_COOKIE, PORTAL_CSRF_COOKIE])
    ctx.cookies.set(name, null, { path: '/', sameSite: 'strict', secure: ctx.secure, overwrite: true });
}

/**
 * Portal links (`POST /portal-sessions`, with the app's key: a session cannot make a link, so a stolen session
 * never outlives its hour) and signing out (`DELETE /portal-sessions/current`, with the session). Opening a link is
 * api/portal/open-route.ts: it comes before the app check.
 */
export const portalSessionRoutes: PartnerRoutes = (router, { knex }) => {
  router.post('/portal-sessions', jsonBody, async function createPortalLinkRoute(ctx) {
    if (ctx.state.portalSession)
      throw new InternalApiError(403, {
        detail: "A portal session cannot make portal links: use the app's key.",
        reason: 'key_required',
      });
    const link = await createPortalLink(knex, actingApp(ctx), ctx.state.app, ctx.request.body);
    ctx.status = 201;
    ctx.set('Cache-Control', 'no-store');
    ctx.body = {
      url: portalLinkUrl(requestOrigin(ctx) ?? '', link.token),
      expires_at: link.expiresAt.toISOString(),
      scopes: link.scopes,
    };
  });

  router.delete(
    '/portal-sessions/current',
    async function closePortalSessionRoute(ctx: Context & { state: PartnerState }) {
      const session = ctx.state.portalSession;
      if (!session)
        throw new InternalApiError(400, {
          detail: 'This request carries no portal session: sign-out is for the portal.',
          reason: 'no_session',
        });
      await closePortalSession(knex, session, ctx.state.requestId);
      clearPortalCookies(ctx);
      ctx.status = 204;
    },
  );
};
