import type { Knex } from 'knex';
import { runSql, sql } from '../../db/sql';
import type { HashedAppKey } from '../../lib/app-keys';
import type { TokenScope } from '../../lib/vocabulary';

// Every statement on api_tokens (db/migrations/016_tokens_and_audit.ts). A revoked token keeps its row.

/** A token as `tokens list` shows it: never its secret or hash. */
export interface ApiTokenView {
  readonly name: string;
  readonly scopes: readonly TokenScope[];
  readonly createdAt: Date;
  readonly createdBy: string;
  readonly expiresAt: Date | null;
  readonly revokedAt: Date | null;
  readonly lastUsedAt: Date | null;
}

/** What an api process keeps in memory to check a presented token: its hash, scopes, expiry and revocation. */
export interface StoredApiToken {
  readonly id: string;
  readonly name: string;
  readonly scopes: readonly TokenScope[];
  readonly hashed: HashedAppKey;
  readonly expiresAt: Date | null;
  readonly revokedAt: Date | null;
}

export interface NewApiToken {
  readonly id: string;
  readonly name: string;
  readonly scopes: readonly TokenScope[];
  readonly hashed: HashedAppKey;
  readonly createdBy: string;
  readonly expiresAt: Date | null;
}

/** Inserts a token; false when the name is taken (by a live or a revoked token), and nothing is written. */
export async function insertApiToken(knex: Knex, token: NewApiToken): Promise<boolean> {
  const rows = await runSql(
    knex,
    sql`INSERT INTO api_tokens (id, name, scopes, salt, hash, created_by, expires_at)
        VALUES (${token.id}::uuid, ${token.name}, ${token.scopes}::text[], ${token.hashed.salt}, ${token.hashed.hash},
          ${token.createdBy}, ${token.expiresAt?.toISOString() ?? null}::timestamptz)
        ON CONFLICT (name) DO NOTHING RETURNING id`,
  );
  return rows.length === 1;
}

/** Revokes the live token of that name; false when no live token has it (unknown, or revoked already). */
export async function revokeApiToken(knex: Knex, name: string, revokedBy: string): Promise<boolean> {
  const rows = await runSql(
    knex,
    sql`UPDATE api_tokens SET revoked_at = now(), revoked_by = ${revokedBy} WHERE name = ${name} AND revoked_at IS NULL
      RETURNING id`,
  );
  return rows.length === 1;
}

/** Every token, oldest first, as `tokens list` shows them. */
export async function listApiTokens(knex: Knex): Promise<ApiTokenView[]> {
  const rows = await runSql<{
    name: string;
    scopes: TokenScope[];
    created_at: Date;
    created_by: string;
    expires_at: Date | null;
    revoked_at: Date | null;
    last_used_at: Date | null;
  }>(
    knex,
    sql`SELECT name, scopes, created_at, created_by, expires_at, revoked_at, last_used_at FROM api_tokens
      ORDER BY created_at, name`,
  );
  return rows.map((r) => ({
    name: r.name,
    scopes: r.scopes,
    createdAt: r.created_at,
    createdBy: r.created_by,
    expiresAt: r.expires_at,
    revokedAt: r.revoked_at,
    lastUsedAt: r.last_used_at,
  }));
}

/** Every token with what checking a presented one needs; revoked ones too, so a refusal can say why. */
export async function loadApiTokens(knex: Knex): Promise<StoredApiToken[]> {
  const rows = await runSql<{
    id: string;
    name: string;
    scopes: TokenScope[];
    salt: Buffer;
    hash: Buffer;
    expires_at: Date | null;
    revoked_at: Date | null;
  }>(knex, sql`SELECT id, name, scopes, salt, hash, expires_at, revoked_at FROM api_tokens`);
  return rows.map((r) => ({
    id: r.id,
    name: r.name,
    scopes: r.scopes,
    hashed: { salt: r.salt, hash: r.hash },
    expiresAt: r.expires_at,
    revokedAt: r.revoked_at,
  }));
}

/** Records when tokens were last used, in one statement for a batch of uses (never on a request's path). */
export async function recordApiTokenUse(knex: Knex, lastUsed: ReadonlyMap<string, Date>): Promise<void> {
  if (!lastUsed.size) return;
  const ids = [...lastUsed.keys()];
  const times = ids.map((id) => lastUsed.get(id)!.toISOString());
  await runSql(
    knex,
    sql`UPDATE api_tokens t SET last_used_at = GREATEST(t.last_used_at, u.at)
          FROM unnest(${ids}::uuid[], ${times}::timestamptz[]) AS u(id, at) WHERE t.id = u.id`,
  );
}
