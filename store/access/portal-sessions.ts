import type { Knex } from 'knex';
import { runSql, sql } from '../../db/sql';
import type { AppScope } from '../../lib/vocabulary';
import type { HashedAppKey } from '../../lib/app-keys';

// The portal's one-time links and sessions (migration 032). Rows are found by id; secrets are compared by the caller
// against the salted hashes held here.

export interface PortalLinkRow {
  readonly id: string;
  readonly app_id: string;
  readonly scopes: AppScope[];
  readonly expired: boolean;
  readonly used: boolean;
  readonly secret: HashedAppKey;
}

export interface NewPortalLink {
  readonly id: string;
  readonly secret: HashedAppKey;
  readonly appId: string;
  readonly scopes: readonly AppScope[];
  readonly createdBy: string;
  readonly ttlSeconds: number;
}

/** Stores a link, and drops the links and sessions that ended more than a day ago, so both tables stay small. */
export async function insertPortalLink(trx: Knex.Transaction, link: NewPortalLink): Promise<Date> {
  await runSql(
    trx,
    sql`DELETE FROM portal_sessions WHERE expires_at < now() - interval '1 day'
           OR ended_at < now() - interval '1 day'`,
  );
  await runSql(
    trx,
    sql`DELETE FROM portal_links l WHERE l.expires_at < now() - interval '1 day'
           AND NOT EXISTS (SELECT 1 FROM portal_sessions s WHERE s.link_id = l.id)`,
  );
  const [row] = await runSql<{ expires_at: Date }>(
    trx,
    sql`INSERT INTO portal_links (id, secret_salt, secret_hash, app_id, scopes, created_by, expires_at)
        VALUES (${link.id}, ${link.secret.salt}, ${link.secret.hash}, ${link.appId}, ${[...link.scopes]}::text[],
                ${link.createdBy}, now() + make_interval(secs => ${link.ttlSeconds}))
        RETURNING expires_at`,
  );
  return row.expires_at;
}

/** A link of an active app by id, with whether it expired or was used (by PostgreSQL's clock). */
export async function findPortalLink(knex: Knex, id: string): Promise<PortalLinkRow | undefined> {
  const [row] = await runSql<Omit<PortalLinkRow, 'secret'> & { secret_salt: Buffer; secret_hash: Buffer }>(
    knex,
    sql`SELECT l.id, l.app_id, l.scopes, l.expires_at <= now() AS expired, l.used_at IS NOT NULL AS used,
               l.secret_salt, l.secret_hash
          FROM portal_links l JOIN partner_apps a ON a.app_id = l.app_id AND a.revoked_at IS NULL
         WHERE l.id = ${id}`,
  );
  if (!row) return undefined;
  const { secret_salt: salt, secret_hash: hash, ...link } = row;
  return { ...link, secret: { salt, hash } };
}

export interface NewPortalSession {
  readonly id: string;
  readonly linkId: string;
  readonly secret: HashedAppKey;
  readonly csrf: HashedAppKey;
  readonly lifetimeSeconds: number;
}

/**
 * Marks the link used and opens its session, in one transaction; undefined when the link was used or expired
 * meanwhile (a second exchange racing this one loses here, and the unique link_id forbids a second session).
 */
export async function openSessionOfLink(
  knex: Knex,
  session: NewPortalSession,
): Promise<{ expires_at: Date; app_id: string } | undefined> {
  return knex.transaction(async (trx) => {
    const [link] = await runSql<{ app_id: string; scopes: AppScope[] }>(
      trx,
      sql`UPDATE portal_links SET used_at = now()
           WHERE id = ${session.linkId} AND used_at IS NULL AND expires_at > now()
          RETURNING app_id, scopes`,
    );
    if (!link) return undefined;
    const [row] = await runSql<{ expires_at: Date; app_id: string }>(
      trx,
      sql`INSERT INTO portal_sessions (id, secret_salt, secret_hash, csrf_salt, csrf_hash, link_id, app_id, scopes,
                                       expires_at)
          VALUES (${session.id}, ${session.secret.salt}, ${session.secret.hash}, ${session.csrf.salt},
                  ${session.csrf.hash}, ${session.linkId}, ${link.app_id}, ${link.scopes}::text[],
                  now() + make_interval(secs => ${session.lifetimeSeconds}))
          RETURNING expires_at, app_id`,
    );
    return row;
  });
}

export interface PortalSessionRow {
  readonly app_id: string;
  readonly scopes: AppScope[];
  readonly secret: HashedAppKey;
  readonly csrf: HashedAppKey;
}

/** A session that has not ended or expired, of an app that is not revoked. */
export async function findLiveSession(knex: Knex, id: string): Promise<PortalSessionRow | undefined> {
  const [row] = await runSql<{
    app_id: string;
    scopes: AppScope[];
    secret_salt: Buffer;
    secret_hash: Buffer;
    csrf_salt: Buffer;
    csrf_hash: Buffer;
  }>(
    knex,
    sql`SELECT s.app_id, s.scopes, s.secret_salt, s.secret_hash, s.csrf_salt, s.csrf_hash
          FROM portal_sessions s JOIN partner_apps a ON a.app_id = s.app_id AND a.revoked_at IS NULL
         WHERE s.id = ${id} AND s.ended_at IS NULL AND s.expires_at > now()`,
  );
  if (!row) return undefined;
  return {
    app_id: row.app_id,
    scopes: row.scopes,
    secret: { salt: row.secret_salt, hash: row.secret_hash },
    csrf: { salt: row.csrf_salt, hash: row.csrf_hash },
  };
}

/** Ends one session (sign-out); false when it had already ended. */
export async function endSession(knex: Knex, id: string): Promise<boolean> {
  const rows = await runSql(
    knex,
    sql`UPDATE portal_sessions SET ended_at = now() WHERE id = ${id} AND ended_at IS NULL RETURNING id`,
  );
  return rows.length > 0;
}

/** Ends every open session of an app (its revocation); the count ended. */
export async function endAppSessions(knex: Knex, appId: string): Promise<number> {
  const rows = await runSql(
    knex,
    sql`UPDATE portal_sessions SET ended_at = now() WHERE app_id = ${appId} AND ended_at IS NULL RETURNING id`,
  );
  return rows.length;
}
