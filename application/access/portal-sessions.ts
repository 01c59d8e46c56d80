import { randomBytes, randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { z } from 'zod';
import { hashAppKey, verifyAppKey } from '../../lib/app-keys';
import { InvalidRequestError } from '../../lib/errors';
import { isCanonicalUuid, zodPathErrors } from '../../lib/validation';
import { APP_SCOPES, type AppScope } from '../../lib/vocabulary';
import { findActiveApp } from '../../store/access/partner-apps';
import {
  endAppSessions,
  endSession,
  findLiveSession,
  findPortalLink,
  insertPortalLink,
  openSessionOfLink,
} from '../../store/access/portal-sessions';
import { auditedChange, type OperatorContext } from './audit';
import { appActor, type PartnerApp } from './partner-apps';

// The partner portal's access (docs/partners.md, "The portal"): a one-time link, made with the app's key or by an
// operator, opens a session of at most an hour, held in an HttpOnly cookie. Links and sessions are `<id>.<secret>`:
// the row is found by id and the secret compared in constant time with its salted hash, as app keys are.

/** A link expires this long after it is made, at most (and by default). */
export const PORTAL_LINK_MAX_TTL_SECONDS = 600;
/** A session ends this long after its link was opened. */
export const PORTAL_SESSION_SECONDS = 3600;

/** What a link may be asked for: a shorter life, and fewer scopes than the app holds (a read-only portal). */
export const portalLinkRequest = z.strictObject({
  ttl_seconds: z
    .int({ message: 'must be an integer' })
    .min(60, { message: 'must be at least 60' })
    .max(PORTAL_LINK_MAX_TTL_SECONDS, { message: `must be at most ${PORTAL_LINK_MAX_TTL_SECONDS}` })
    .optional()
    .meta({ description: `Seconds the link can be opened in; ${PORTAL_LINK_MAX_TTL_SECONDS} by default.` }),
  scopes: z
    .array(z.enum(APP_SCOPES, { message: `must be one of ${APP_SCOPES.join(', ')}` }))
    .min(1, { message: 'must name at least one scope' })
    .optional()
    .meta({ description: "The session's scopes, each one the app holds; by default all of the app's." }),
});
export type PortalLinkRequest = z.infer<typeof portalLinkRequest>;

/** A new `<id>.<secret>` and the hash that is stored of its secret. */
function newToken() {
  const id = randomUUID();
  const secret = randomBytes(32).toString('base64url');
  return { id, token: `${id}.${secret}`, hashed: hashAppKey(secret) };
}

/** The id and secret of a presented token, or undefined when it cannot be one of ours. */
function parseToken(token: string): { id: string; secret: string } | undefined {
  const dot = token.indexOf('.');
  const id = token.slice(0, dot);
  const secret = token.slice(dot + 1);
  if (dot < 0 || !isCanonicalUuid(id) || secret.length === 0 || secret.length > 100) return undefined;
  return { id, secret };
}

/** The portal's address with a link's token in its fragment, which browsers never send to a server. */
export const portalLinkUrl = (origin: string, token: string) => `${origin}/portal#token=${encodeURIComponent(token)}`;

export interface PortalLink {
  /** Shown once, in the link's fragment: the server never sees it in a URL. */
  readonly token: string;
  readonly expiresAt: Date;
  readonly scopes: readonly AppScope[];
}

/** A one-time link for `app`, audited as `portal.link` by `who` (the app itself, or an operator's CLI). */
export async function createPortalLink(
  knex: Knex,
  who: OperatorContext,
  app: Pick<PartnerApp, 'appId' | 'scopes'>,
  body: unknown,
): Promise<PortalLink> {
  const parsed = portalLinkRequest.safeParse(body ?? {});
  if (!parsed.success) throw new InvalidRequestError(zodPathErrors(parsed.error));
  const asked = parsed.data.scopes ? [...new Set(parsed.data.scopes)] : [...app.scopes];
  const missing = asked.filter((scope) => !app.scopes.includes(scope));
  if (missing.length)
    throw new InvalidRequestError(
      [{ path: 'scopes', message: `the app does not hold ${missing.join(', ')}` }],
      `The app does not hold ${missing.join(', ')}.`,
    );
  const ttlSeconds = parsed.data.ttl_seconds ?? PORTAL_LINK_MAX_TTL_SECONDS;
  const { id, token, hashed } = newToken();
  const what = {
    action: 'portal.link' as const,
    target: app.appId,
    parameters: { ttl_seconds: ttlSeconds, scopes: asked },
  };
  const expiresAt = await auditedChange(knex, who, what, (trx) =>
    insertPortalLink(trx, { id, secret: hashed, appId: app.appId, scopes: asked, createdBy: who.actor, ttlSeconds }),
  );
  return { token, expiresAt, scopes: asked };
}

/** An operator's link (`portal link`) for the active app `appId`; undefined when no active app has that id. */
export async function createOperatorPortalLink(
  knex: Knex,
  who: OperatorContext,
  appId: string,
  body: unknown,
): Promise<PortalLink | undefined> {
  const app = await findActiveApp(knex, appId);
  return app && createPortalLink(knex, who, { appId, scopes: app.scopes }, body);
}

/** Ends every open session of an app, in the transaction that revokes it. */
export const endPortalSessionsOfApp = (knex: Knex, appId: string): Promise<number> => endAppSessions(knex, appId);

/** Why a link opens no session: it was opened before, its 10 minutes passed, or it is not ours (or its app revoked). */
export type PortalLinkRefusal = 'link_used' | 'link_expired' | 'link_unknown';

export type OpenedPortalSession =
  | { readonly ok: true; readonly cookie: string; readonly csrf: string; readonly expiresAt: Date }
  | { readonly ok: false; readonly reason: PortalLinkRefusal };

/** Exchanges a link's token for a session, once; audited as `portal.open` by the app. */
export async function openPortalSession(knex: Knex, token: string, requestId?: string): Promise<OpenedPortalSession> {
  const parsed = parseToken(token);
  const link = parsed && (await findPortalLink(knex, parsed.id));
  if (!parsed || !link || !verifyAppKey(parsed.secret, link.secret)) return { ok: false, reason: 'link_unknown' };
  if (link.used) return { ok: false, reason: 'link_used' };
  if (link.expired) return { ok: false, reason: 'link_expired' };
  const session = newToken();
  const csrf = randomBytes(32).toString('base64url');
  const who = { actor: appActor(link.app_id), requestId };
  const opened = await auditedChange(knex, who, { action: 'portal.open', target: link.app_id }, () =>
    openSessionOfLink(knex, {
      id: session.id,
      linkId: link.id,
      secret: session.hashed,
      csrf: hashAppKey(csrf),
      lifetimeSeconds: PORTAL_SESSION_SECONDS,
    }),
  );
  if (!opened) return { ok: false, reason: 'link_used' };
  return { ok: true, cookie: session.token, csrf, expiresAt: opened.expires_at };
}

export interface PortalSession {
  readonly sessionId: string;
  /** The app as its key would give it, with only the scopes both the session and the app hold now. */
  readonly app: PartnerApp;
  /** Whether `presented` is this session's double-submit token (writes must carry it). */
  readonly csrfMatches: (presented: string) => boolean;
}

/** The live session a cookie names, of an app not revoked; undefined otherwise. */
export async function authenticatePortalSession(knex: Knex, cookie: string): Promise<PortalSession | undefined> {
  const parsed = parseToken(cookie);
  const session = parsed && (await findLiveSession(knex, parsed.id));
  if (!parsed || !session || !verifyAppKey(parsed.secret, session.secret)) return undefined;
  const app = await findActiveApp(knex, session.app_id);
  if (!app) return undefined;
  return {
    sessionId: parsed.id,
    app: {
      appId: app.app_id,
      name: app.name,
      scopes: app.scopes.filter((scope) => session.scopes.includes(scope)),
      companyIds: app.company_ids,
    },
    csrfMatches: (presented) => presented.length > 0 && verifyAppKey(presented, session.csrf),
  };
}

/** Signs a session out, audited as `portal.close` by its app. */
export async function closePortalSession(knex: Knex, session: PortalSession, requestId?: string): Promise<void> {
  const who = { actor: appActor(session.app.appId), requestId };
  await auditedChange(knex, who, { action: 'portal.close', target: session.app.appId }, (trx) =>
    endSession(trx, session.sessionId),
  );
}
