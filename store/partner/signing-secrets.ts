import type { Knex } from 'knex';
import { prepared, runSql, sql } from '../../db/sql';
import { openText, type DataAtRest, type StoredText } from '../../lib/at-rest';
import type { Config } from '../../lib/config';
import { StoredTextDecryptionError } from '../../lib/errors';

// The partner's signing secrets (docs/partners.md, "Signing secrets"): those made through the partner API, in
// `partner_signing_secrets` (migration 029), and those of PARTNER_SIGNING_SECRETS. Every POST is signed with each
// secret that is live: not deleted, and not past its end (`expires_at`). Creating a secret gives the live ones an
// end, an overlap away; the configuration's secrets end an overlap after the first API secret (docs/decisions.md).

/** What a sealed secret is bound to: its own row. */
export const signingSecretBinding = (id: string): string => `partner_signing_secrets.secret_sealed:${id}`;

/** Serialises creations and deletions, so two of them never both leave the endpoint without a current secret. */
const LOCK = 'partner_signing_secrets';

/** Where a secret comes from: the partner API, or PARTNER_SIGNING_SECRETS (which the API cannot delete). */
export type SigningSecretSource = 'api' | 'configuration';

/** A secret that signs now, without its secret. */
export interface LiveSigningSecret {
  readonly id: string;
  readonly source: SigningSecretSource;
  /** Unknown for a configuration's secret: null. */
  readonly createdAt: Date | null;
  readonly expiresAt: Date | null;
  /** Not tracked for a configuration's secret: null. */
  readonly lastUsedAt: Date | null;
}

/** An API secret as its row holds it, live or not. */
interface SecretRow {
  readonly id: string;
  readonly created_at: Date;
  readonly expires_at: Date | null;
  readonly last_used_at: Date | null;
  readonly secret_text: string | null;
  readonly secret_sealed: Buffer | null;
  readonly secret_key_id: string | null;
}

/** The configuration's secret ids: its position in PARTNER_SIGNING_SECRETS, which says nothing of the secret. */
export const configurationSecretId = (position: number): string => `config-${position + 1}`;
export const CONFIGURATION_SECRET_ID = /^config-([1-9]\d{0,3})$/;

/**
 * The live API secrets, with the database's clock and the first API secret's creation (from which the
 * configuration's secrets end), in one statement.
 */
async function readLive(knex: Knex): Promise<{ now: Date; firstCreatedAt: Date | null; rows: SecretRow[] }> {
  const rows = await runSql<SecretRow & { now: Date; first_created_at: Date | null }>(
    knex,
    prepared(
      'read-live-signing-secrets',
      sql`SELECT c.now, c.first_created_at, s.id::text, s.created_at, s.expires_at, s.last_used_at, s.secret_text,
                 s.secret_sealed, s.secret_key_id
            FROM (SELECT now() AS now, min(created_at) AS first_created_at FROM partner_signing_secrets) c
            LEFT JOIN partner_signing_secrets s
              ON s.deleted_at IS NULL AND (s.expires_at IS NULL OR s.expires_at > c.now)
           ORDER BY s.created_at, s.id`,
    ),
  );
  const [{ now, first_created_at }] = rows;
  return { now, firstCreatedAt: first_created_at, rows: rows.filter((row) => row.id !== null) };
}

/** When the configuration's secrets stop signing: an overlap after the first API secret; null before one exists. */
const configurationEnd = (firstCreatedAt: Date | null, config: Config): Date | null =>
  firstCreatedAt && new Date(firstCreatedAt.getTime() + config.PARTNER_SIGNING_SECRET_OVERLAP_HOURS * 3_600_000);

/** The configuration's secrets that sign at `now`, with their ids. */
function configurationSecrets(config: Config, firstCreatedAt: Date | null, now: Date) {
  const expiresAt = configurationEnd(firstCreatedAt, config);
  if (expiresAt && expiresAt <= now) return [];
  return (config.PARTNER_SIGNING_SECRETS ?? []).map((secret, position) => ({
    id: configurationSecretId(position),
    secret,
    expiresAt,
  }));
}

/** Every secret that signs now, oldest first, the configuration's before the API's; no secret in it. */
export async function liveSigningSecrets(knex: Knex, config: Config): Promise<LiveSigningSecret[]> {
  const { now, firstCreatedAt, rows } = await readLive(knex);
  return [
    ...configurationSecrets(config, firstCreatedAt, now).map(({ id, expiresAt }) => ({
      id,
      source: 'configuration' as const,
      createdAt: null,
      expiresAt,
      lastUsedAt: null,
    })),
    ...rows.map((row) => ({
      id: row.id,
      source: 'api' as const,
      createdAt: row.created_at,
      expiresAt: row.expires_at,
      lastUsedAt: row.last_used_at,
    })),
  ];
}

/** The keys every POST is signed with now, and which API secrets they are; those no listed key opens apart. */
export interface SigningKeys {
  readonly keys: readonly Buffer[];
  readonly apiIds: readonly string[];
  /** API secrets sealed under a key PAYLOAD_ENCRYPTION_KEYS no longer lists (or failing their tag): not signing. */
  readonly unreadable: ReadonlyArray<{ readonly id: string; readonly reason: string }>;
}

/** The live secrets' keys, API secrets opened with the payload keys. */
export async function signingKeysNow(knex: Knex, config: Config, atRest: DataAtRest): Promise<SigningKeys> {
  const { now, firstCreatedAt, rows } = await readLive(knex);
  const keys: Buffer[] = configurationSecrets(config, firstCreatedAt, now).map(({ secret }) => secret);
  const apiIds: string[] = [];
  const unreadable: Array<{ id: string; reason: string }> = [];
  for (const row of rows) {
    const stored: StoredText = { clear: row.secret_text, sealed: row.secret_sealed, keyId: row.secret_key_id };
    try {
      const secret = openText(atRest, stored, signingSecretBinding(row.id), 'a signing secret')!;
      keys.push(secretKey(secret));
      apiIds.push(row.id);
    } catch (error) {
      if (!(error instanceof StoredTextDecryptionError)) throw error;
      unreadable.push({ id: row.id, reason: error.message });
    }
  }
  return { keys, apiIds, unreadable };
}

/** The HMAC key of a `whsec_` secret: the bytes its base64 holds (Standard Webhooks). */
export const secretKey = (secret: string): Buffer => Buffer.from(secret.slice('whsec_'.length), 'base64');

/** Takes the lock that serialises creations and deletions, for the transaction. */
const lockSecrets = (trx: Knex.Transaction) => runSql(trx, sql`SELECT pg_advisory_xact_lock(hashtext(${LOCK}))`);

/** Ended secrets keep their row, not their secret. */
const wipeEnded = (trx: Knex.Transaction) =>
  runSql(
    trx,
    sql`UPDATE partner_signing_secrets SET secret_text = NULL, secret_sealed = NULL, secret_key_id = NULL
         WHERE expires_at <= now() AND (secret_text IS NOT NULL OR secret_sealed IS NOT NULL)`,
  );

/**
 * Stores a new secret (`stored`: sealed or in clear) and gives every live one an end `overlapHours` away (or keeps an
 * earlier end). Returns its creation time.
 */
export async function insertSigningSecret(
  trx: Knex.Transaction,
  secret: { readonly id: string; readonly stored: StoredText; readonly createdBy: string },
  overlapHours: number,
): Promise<Date> {
  await lockSecrets(trx);
  await runSql(
    trx,
    sql`UPDATE partner_signing_secrets
           SET expires_at = LEAST(COALESCE(expires_at, 'infinity'),
                                  now() + make_interval(hours => ${overlapHours}::int))
         WHERE deleted_at IS NULL AND (expires_at IS NULL OR expires_at > now())`,
  );
  await wipeEnded(trx);
  const { stored } = secret;
  const [row] = await runSql<{ created_at: Date }>(
    trx,
    sql`INSERT INTO partner_signing_secrets (id, secret_text, secret_sealed, secret_key_id, created_by)
        VALUES (${secret.id}::uuid, ${stored.clear}, ${stored.sealed}, ${stored.keyId}, ${secret.createdBy})
        RETURNING created_at`,
  );
  return row.created_at;
}

/**
 * Ends a live API secret now, its secret wiped: `unknown` when no live API secret has that id, `current` when it is
 * the one no newer secret replaces (the endpoint always keeps a secret to sign with).
 */
export async function endSigningSecret(trx: Knex.Transaction, id: string): Promise<'ended' | 'unknown' | 'current'> {
  await lockSecrets(trx);
  const live = await runSql<{ id: string; expires_at: Date | null }>(
    trx,
    sql`SELECT id::text, expires_at FROM partner_signing_secrets
         WHERE deleted_at IS NULL AND (expires_at IS NULL OR expires_at > now())`,
  );
  if (!live.some((row) => row.id === id)) return 'unknown';
  if (!live.some((row) => row.id !== id && row.expires_at === null)) return 'current';
  await runSql(
    trx,
    sql`UPDATE partner_signing_secrets
           SET deleted_at = now(), secret_text = NULL, secret_sealed = NULL, secret_key_id = NULL
         WHERE id = ${id}::uuid`,
  );
  await wipeEnded(trx);
  return 'ended';
}

/** Notes that these secrets signed a POST: a row written at most once a minute, however many POSTs. */
export async function touchSigningSecrets(knex: Knex, ids: readonly string[]): Promise<void> {
  if (!ids.length) return;
  await runSql(
    knex,
    prepared(
      'touch-signing-secrets',
      sql`UPDATE partner_signing_secrets SET last_used_at = now()
           WHERE id = ANY(${ids}::uuid[]) AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute')`,
    ),
  );
}
