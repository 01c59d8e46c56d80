import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type Router from '@koa/router';
import { z } from 'zod';
import { openPortalSession, PORTAL_SESSION_SECONDS } from '../../application/access/portal-sessions';
import { InternalApiError, InvalidRequestError } from '../../lib/errors';
import { zodPathErrors } from '../../lib/validation';
import type { ApiDependencies } from '../context';
import { createRouter } from '../router';
import { answerFile, answerPage, type StaticFile } from '../static-files';
import { answerInternalErrors } from '../internal/errors';
import { jsonBody } from '../internal/json-body';
import { PORTAL_CSRF_COOKIE, PORTAL_SESSION_COOKIE } from '../partner/app-auth';
import { PORTAL_CONTENT_SECURITY_POLICY, PORTAL_PAGE } from './page';

// The partner portal (docs/partners.md, "The portal"): one page and its compiled script (portal/, built to
// dist/portal-assets by `npm run build`), which does everything through /partner/v1 with the session cookie. The
// only route here that the partner API lacks is the link's exchange for that cookie.

const CONTENT_TYPES: Record<string, string> = {
  '.js': 'application/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
};

/** The package's root (where package.json is), from the source tree or from dist/. */
function packageRoot(): string {
  let dir = __dirname;
  while (!existsSync(path.join(dir, 'package.json'))) dir = path.dirname(dir);
  return dir;
}

/** The built assets, read once: a missing build fails the API's start rather than each page load. */
function loadAssets(): Map<string, StaticFile> {
  const dir = path.join(packageRoot(), 'dist', 'portal-assets');
  if (!existsSync(dir)) throw new Error(`the portal's assets are not built (${dir}): run npm run build`);
  const files = new Map<string, StaticFile>();
  for (const name of readdirSync(dir)) {
    const type = CONTENT_TYPES[path.extname(name)];
    if (type) files.set(name, { type, body: readFileSync(path.join(dir, name)) });
  }
  return files;
}

const openRequest = z.strictObject({ token: z.string({ message: 'must be a string' }).max(200) });

const REFUSALS = {
  link_used: 'This portal link was already used: ask for a new one.',
  link_expired: 'This portal link has expired: ask for a new one.',
  link_unknown: 'This is not a valid portal link: ask for a new one.',
} as const;

export function portalRouter({ knex }: ApiDependencies): Router {
  const assets = loadAssets();
  const router = createRouter();
  router.use(answerInternalErrors);

  router.get('/portal', function portalPage(ctx) {
    answerPage(ctx, PORTAL_CONTENT_SECURITY_POLICY, PORTAL_PAGE, {
      'Referrer-Policy': 'no-referrer',
      'Cache-Control': 'no-store',
    });
  });

  router.get('/portal/assets/:file', function portalAsset(ctx) {
    answerFile(ctx, assets, 'no-cache');
  });

  // JSON only, so a cross-site form cannot post here; the token comes in the body, never in a URL.
  router.post('/partner/v1/portal-sessions/open', jsonBody, async function openPortalSessionRoute(ctx) {
    const parsed = openRequest.safeParse(ctx.request.body);
    if (!parsed.success) throw new InvalidRequestError(zodPathErrors(parsed.error));
    const opened = await openPortalSession(knex, parsed.data.token, ctx.state.requestId as string | undefined);
    if (!opened.ok) throw new InternalApiError(403, { detail: REFUSALS[opened.reason], reason: opened.reason });
    const cookie = { path: '/', sameSite: 'strict' as const, secure: ctx.secure, overwrite: true };
    const maxAge = PORTAL_SESSION_SECONDS * 1000;
    ctx.cookies.set(PORTAL_SESSION_COOKIE, opened.cookie, { ...cookie, httpOnly: true, maxAge });
    ctx.cookies.set(PORTAL_CSRF_COOKIE, opened.csrf, { ...cookie, httpOnly: false, maxAge });
    ctx.set('Cache-Control', 'no-store');
    ctx.status = 201;
    ctx.body = { expires_at: opened.expiresAt.toISOString() };
  });
  return router;
}
