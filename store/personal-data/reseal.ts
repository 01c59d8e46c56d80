import type { Knex } from 'knex';
import { runSql, sql } from '../../db/sql';
import type { StoredText } from '../../lib/at-rest';

// `keys reseal`'s statements: a batch of bodies (or excerpts) not yet under the target stored key id, locked in
// primary-key order from a cursor on, and their new ciphertexts written back in one statement. What is left to
// do is read from the rows themselves, so a run killed half-way is resumed by the next run from the start.

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
export async function lockBodiesToReseal(trx: Knex.Transaction, target: string, after: ResealCursor | null, limit: number): Promise<ResealRow[]> {
  const rows = await runSql<{ id: string; body: string | null; body_sealed: Buffer | null; body_key_id: string | null; redelivery_of: string | null }>(
    trx,
    sql`SELECT id, body::text AS body, body_sealed, body_key_id, redelivery_of FROM webhook_events
         WHERE id > ${(after ?? START).webhookId}::uuid AND (body IS NOT NULL OR body_sealed IS NOT NULL) AND body_key_id IS DISTINCT FROM ${target}
         ORDER BY id LIMIT ${limit} FOR UPDATE SKIP LOCKED`,
  );
  return rows.map((row) => ({ webhookId: row.id, redeliveryOf: row.redelivery_of, attempt: null, stored: { clear: row.body, sealed: row.body_sealed, keyId: row.body_key_id } }));
}

/** Locks, for the transaction, the next `limit` response excerpts after `after` that are not sealed under `target`; as bodies, skipping held rows. */
export async function lockExcerptsToReseal(trx: Knex.Transaction, target: string, after: ResealCursor | null, limit: number): Promise<ResealRow[]> {
  const { webhookId, attempt } = after ?? START;
  const rows = await runSql<{ webhook_id: string; attempt: number; response_body: string | null; response_body_sealed: Buffer | null; response_body_key_id: string | null }>(
    trx,
    sql`SELECT webhook_id, attempt, response_body, response_body_sealed, response_body_key_id FROM webhook_attempts
         WHERE (webhook_id, attempt) > (${webhookId}::uuid, ${attempt}::smallint)
           AND (response_body IS NOT NULL OR response_body_sealed IS NOT NULL) AND response_body_key_id IS DISTINCT FROM ${target}
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

/** Writes resealed bodies back, in clear column emptied, in one statement. */
export async function writeResealedBodies(trx: Knex.Transaction, keyId: string, resealed: readonly Resealed[]): Promise<void> {
  if (!resealed.length) return;
  await runSql(
    trx,
    sql`UPDATE webhook_events AS e SET body = NULL, body_sealed = decode(v.sealed, 'base64'), body_key_id = ${keyId}
          FROM unnest(${resealed.map((r) => r.webhookId)}::uuid[], ${resealed.map((r) => r.sealed.toString('base64'))}::text[]) AS v(id, sealed)
         WHERE e.id = v.id`,
  );
}

/** Writes resealed response excerpts back, in clear column emptied, in one statement. */
export async function writeResealedExcerpts(trx: Knex.Transaction, keyId: string, resealed: readonly Resealed[]): Promise<void> {
  if (!resealed.length) return;
  await runSql(
    trx,
    sql`UPDATE webhook_attempts AS a SET response_body = NULL, response_body_sealed = decode(v.sealed, 'base64'), response_body_key_id = ${keyId}
          FROM unnest(${resealed.map((r) => r.webhookId)}::uuid[], ${resealed.map((r) => String(r.attempt))}::smallint[], ${resealed.map((r) => r.sealed.toString('base64'))}::text[])
               AS v(webhook_id, attempt, sealed)
         WHERE a.webhook_id = v.webhook_id AND a.attempt = v.attempt`,
  );
}
