import type { Knex } from 'knex';
import { raw, runSql, sql } from '../../db/sql';
import type { StoredText } from '../../lib/at-rest';

// `keys reseal`'s statements: a batch of bodies (or excerpts, or ordering lane keys) not yet under the target
// stored key id, locked in primary-key order from a cursor on, and their new ciphertexts written back in one statement.
// What is left to do is read from the rows themselves, so a run killed half-way is resumed by the next run from the
// start.

/** One stored text to reseal: where it is (its webhook, and its attempt for an excerpt) and how it rests. */
export interface ResealRow {
  readonly webhookId: string;
  /** A body's: the original its row redelivers, whose id a body in format v2 is bound to. */
  readonly redeliveryOf?: string | null;
  readonly attempt: number | null;
  readonly stored: StoredText;
}

/** The position after the last row of a batch: a webhook id, and for excerpts its attempt. */
export interface ResealCursor {
  readonly webhookId: string;
  readonly attempt: number;
}

const START: ResealCursor = { webhookId: '00000000-0000-0000-0000-000000000000', attempt: 0 };

/**
 * Locks, for the transaction, the next `limit` bodies after `after` that are not sealed under `target`. A row another
 * transaction holds (an erasure, an attempt's record) is skipped, never waited for: no deadlock with them, and the
 * next pass takes it.
 */
export async function lockBodiesToReseal(
  trx: Knex.Transaction,
  target: string,
  after: ResealCursor | null,
  limit: number,
): Promise<ResealRow[]> {
  const rows = await runSql<{
    id: string;
    body: string | null;
    body_sealed: Buffer | null;
    body_key_id: string | null;
    redelivery_of: string | null;
  }>(
    trx,
    sql`SELECT id, body::text AS body, body_sealed, body_key_id, redelivery_of FROM webhook_events
         WHERE id > ${(after ?? START).webhookId}::uuid AND (body IS NOT NULL OR body_sealed IS NOT NULL)
           AND body_key_id IS DISTINCT FROM ${target}
         ORDER BY id LIMIT ${limit} FOR UPDATE SKIP LOCKED`,
  );
  return rows.map((row) => ({
    webhookId: row.id,
    redeliveryOf: row.redelivery_of,
    attempt: null,
    stored: { clear: row.body, sealed: row.body_sealed, keyId: row.body_key_id },
  }));
}

/**
 * Locks, for the transaction, the next `limit` response excerpts after `after` that are not sealed under `target`; as
 * bodies, skipping held rows.
 */
export async function lockExcerptsToReseal(
  trx: Knex.Transaction,
  target: string,
  after: ResealCursor | null,
  limit: number,
): Promise<ResealRow[]> {
  const { webhookId, attempt } = after ?? START;
  const rows = await runSql<{
    webhook_id: string;
    attempt: number;
    response_body: string | null;
    response_body_sealed: Buffer | null;
    response_body_key_id: string | null;
  }>(
    trx,
    sql`SELECT webhook_id, attempt, response_body, response_body_sealed, response_body_key_id FROM webhook_attempts
         WHERE (webhook_id, attempt) > (${webhookId}::uuid, ${attempt}::smallint)
           AND (response_body IS NOT NULL OR response_body_sealed IS NOT NULL)
           AND response_body_key_id IS DISTINCT FROM ${target}
         ORDER BY webhook_id, attempt LIMIT ${limit} FOR UPDATE SKIP LOCKED`,
  );
  return rows.map((row) => ({
    webhookId: row.webhook_id,
    attempt: row.attempt,
    stored: { clear: row.response_body, sealed: row.response_body_sealed, keyId: row.response_body_key_id },
  }));
}

/** A resealed text: its row, and its new ciphertext under `keyId` (a stored key id). */
export interface Resealed {
  readonly webhookId: string;
  readonly attempt: number | null;
  readonly sealed: Buffer;
}

/**
 * Where a text keyed by its row's id rests: its table, the id's type and its three columns (fixed names, never input).
 */
interface SealedById {
  readonly table: 'webhook_events' | 'ordering_lanes' | 'partner_signing_secrets';
  readonly idType: 'uuid' | 'bigint';
  readonly clear: string;
  readonly sealed: string;
  readonly keyId: string;
}

/** Writes texts sealed under `keyId` back to their rows by id, in clear column emptied, in one statement. */
async function writeSealedById(
  trx: Knex.Transaction,
  at: SealedById,
  keyId: string,
  resealed: ReadonlyArray<{ readonly id: string; readonly sealed: Buffer }>,
): Promise<void> {
  if (!resealed.length) return;
  await runSql(
    trx,
    sql`UPDATE ${raw(at.table)} AS t SET ${raw(at.clear)} = NULL, ${raw(at.sealed)} = decode(v.sealed, 'base64'),
      ${raw(at.keyId)} = ${keyId}
          FROM unnest(${resealed.map((r) => r.id)}::${raw(at.idType)}[],
            ${resealed.map((r) => r.sealed.toString('base64'))}::text[]) AS v(id, sealed)
         WHERE t.id = v.id`,
  );
}

/** Writes resealed bodies back, in clear column emptied, in one statement. */
export async function writeResealedBodies(
  trx: Knex.Transaction,
  keyId: string,
  resealed: readonly Resealed[],
): Promise<void> {
  const at = {
    table: 'webhook_events',
    idType: 'uuid',
    clear: 'body',
    sealed: 'body_sealed',
    keyId: 'body_key_id',
  } as const;
  await writeSealedById(
    trx,
    at,
    keyId,
    resealed.map((r) => ({ id: r.webhookId, sealed: r.sealed })),
  );
}

/** Writes resealed response excerpts back, in clear column emptied, in one statement. */
export async function writeResealedExcerpts(
  trx: Knex.Transaction,
  keyId: string,
  resealed: readonly Resealed[],
): Promise<void> {
  if (!resealed.length) return;
  await runSql(
    trx,
    sql`UPDATE webhook_attempts AS a SET response_body = NULL, response_body_sealed = decode(v.sealed, 'base64'),
      response_body_key_id = ${keyId}
          FROM unnest(${resealed.map((r) => r.webhookId)}::uuid[],
            ${resealed.map((r) => String(r.attempt))}::smallint[],
              ${resealed.map((r) => r.sealed.toString('base64'))}::text[])
               AS v(webhook_id, attempt, sealed)
         WHERE a.webhook_id = v.webhook_id AND a.attempt = v.attempt`,
  );
}

/** Where ordering lanes keep their keys, bound to the lane's digest (store/ordering/lanes.ts). */
const LANE_KEYS_AT = {
  table: 'ordering_lanes',
  idType: 'bigint',
  clear: 'key_text',
  sealed: 'key_sealed',
  keyId: 'key_key_id',
} as const;

/** Where the partner's signing secrets rest, each bound to its own id (store/partner/signing-secrets.ts). */
const SIGNING_SECRETS_AT = {
  table: 'partner_signing_secrets',
  idType: 'uuid',
  clear: 'secret_text',
  sealed: 'secret_sealed',
  keyId: 'secret_key_id',
} as const;

/** A text keyed by its row's id, locked to reseal: the id, how it rests, and `extra`, a column read beside it. */
interface LockedById {
  readonly id: string;
  readonly stored: StoredText;
  readonly extra: Buffer | null;
}

/**
 * Locks, for the transaction, the next `limit` texts of `at` after id `after` not sealed under `target`; as bodies,
 * skipping held rows. `extra`: a column (a fixed name) read beside each, and only rows where it is set.
 */
async function lockSealedById(
  trx: Knex.Transaction,
  at: SealedById,
  target: string,
  after: string | null,
  limit: number,
  extra?: string,
): Promise<LockedById[]> {
  const first = at.idType === 'uuid' ? START.webhookId : '0';
  const rows = await runSql<{
    id: string;
    clear: string | null;
    sealed: Buffer | null;
    key_id: string | null;
    extra: Buffer | null;
  }>(
    trx,
    sql`SELECT id::text, ${raw(at.clear)} AS clear, ${raw(at.sealed)} AS sealed, ${raw(at.keyId)} AS key_id,
               ${raw(extra ?? 'NULL::bytea')} AS extra
          FROM ${raw(at.table)}
         WHERE id > ${after ?? first}::${raw(at.idType)}
           AND (${raw(at.clear)} IS NOT NULL OR ${raw(at.sealed)} IS NOT NULL)
           AND ${raw(extra ? `${extra} IS NOT NULL` : 'true')}
           AND ${raw(at.keyId)} IS DISTINCT FROM ${target}
         ORDER BY id LIMIT ${limit} FOR UPDATE SKIP LOCKED`,
  );
  return rows.map((row) => ({
    id: row.id,
    stored: { clear: row.clear, sealed: row.sealed, keyId: row.key_id },
    extra: row.extra,
  }));
}

/** An ordering lane's key to reseal: its lane, and the digest its sealed form is bound to. */
export interface LaneKeyToReseal {
  readonly laneId: string;
  readonly digest: Buffer;
  readonly stored: StoredText;
}

/**
 * Locks, for the transaction, the next `limit` lane keys after lane `after` not sealed under `target`; as bodies,
 * skipping held lanes.
 */
export async function lockLaneKeysToReseal(
  trx: Knex.Transaction,
  target: string,
  after: string | null,
  limit: number,
): Promise<LaneKeyToReseal[]> {
  const rows = await lockSealedById(trx, LANE_KEYS_AT, target, after, limit, 'key_digest');
  return rows.map(({ id, stored, extra }) => ({ laneId: id, digest: extra!, stored }));
}

/** Writes resealed lane keys back, in clear column emptied, in one statement. */
export async function writeResealedLaneKeys(
  trx: Knex.Transaction,
  keyId: string,
  resealed: ReadonlyArray<{ readonly laneId: string; readonly sealed: Buffer }>,
): Promise<void> {
  await writeSealedById(
    trx,
    LANE_KEYS_AT,
    keyId,
    resealed.map((r) => ({ id: r.laneId, sealed: r.sealed })),
  );
}

/** A partner's signing secret to reseal: its row, bound to its own id. */
export interface SigningSecretToReseal {
  readonly id: string;
  readonly stored: StoredText;
}

/** Locks the next `limit` signing secrets after `after` not sealed under `target`; ended secrets hold none. */
export async function lockSigningSecretsToReseal(
  trx: Knex.Transaction,
  target: string,
  after: string | null,
  limit: number,
): Promise<SigningSecretToReseal[]> {
  const rows = await lockSealedById(trx, SIGNING_SECRETS_AT, target, after, limit);
  return rows.map(({ id, stored }) => ({ id, stored }));
}

/** Writes resealed signing secrets back, in clear column emptied, in one statement. */
export const writeResealedSigningSecrets = (
  trx: Knex.Transaction,
  keyId: string,
  resealed: ReadonlyArray<{ readonly id: string; readonly sealed: Buffer }>,
): Promise<void> => writeSealedById(trx, SIGNING_SECRETS_AT, keyId, resealed);
