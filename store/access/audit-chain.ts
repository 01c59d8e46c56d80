import type { Knex } from 'knex';
import { prepared, raw, runSql, sql } from '../../db/sql';

// Reading the audit trail's hash chain (db/migrations/020_verifiable_audit.ts) for `audit verify`, and the
// retention purge's one way of removing rows from it.

/**
 * A row's canonical content, computed here rather than by the database's audit_event_content(): the same
 * expression, so that the verifier does not trust a function stored in the database it checks.
 */
const CONTENT = `jsonb_build_array(to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
                                  actor, action, target, parameters, outcome, error, request_id,
                                  phase, operation_id)::text`;

/** Where the chain starts (the last row purged; seq 0 and zeros before any purge) and ends (the last row). */
export interface ChainEnds {
  readonly anchorSeq: number;
  readonly anchorHash: Buffer;
  readonly headSeq: number;
  readonly headHash: Buffer;
}

export async function readChainEnds(knex: Knex): Promise<ChainEnds> {
  const [row] = await runSql<{ anchor_seq: number; anchor_hash: Buffer; head_seq: number; head_hash: Buffer }>(
    knex,
    sql`SELECT anchor_seq, anchor_hash, head_seq, head_hash FROM audit_chain`,
  );
  return { anchorSeq: row.anchor_seq, anchorHash: row.anchor_hash, headSeq: row.head_seq, headHash: row.head_hash };
}

/** A row as the verifier sees it: its place, its links and its canonical content (UTF-8 text). */
export interface ChainedRow {
  readonly id: number;
  readonly seq: number;
  readonly prev_hash: Buffer;
  readonly hash: Buffer;
  readonly content: string;
}

/** Up to `limit` rows after `afterSeq`, in chain order, on the unique index of seq. */
export function chainedRowsAfter(knex: Knex, afterSeq: number, limit: number): Promise<ChainedRow[]> {
  return runSql<ChainedRow>(
    knex,
    prepared(
      'audit-chain-rows',
      sql`SELECT id, seq, prev_hash, hash, ${raw(CONTENT)} AS content FROM audit_events
      WHERE seq > ${afterSeq} ORDER BY seq LIMIT ${limit}`,
    ),
  );
}

/** Rows placed at or before the anchor, which no row may be once the purge has moved past them. */
export async function rowsBeforeAnchor(knex: Knex, anchorSeq: number): Promise<number[]> {
  const rows = await runSql<{ seq: number }>(
    knex,
    sql`SELECT seq FROM audit_events WHERE seq <= ${anchorSeq} ORDER BY seq LIMIT 100`,
  );
  return rows.map((row) => row.seq);
}

/** The anchor the latest successful purge recorded in its own audit row, if any purge removed rows. */
export async function recordedAnchor(knex: Knex): Promise<{ seq: number; hash: string } | undefined> {
  const [row] = await runSql<{ anchor_seq: number; anchor_hash: string }>(
    knex,
    sql`SELECT (parameters->>'anchor_seq')::bigint AS anchor_seq, parameters->>'anchor_hash' AS anchor_hash
      FROM audit_events
         WHERE action = 'audit.purge' AND outcome = 'succeeded' ORDER BY seq DESC LIMIT 1`,
  );
  return row && { seq: Number(row.anchor_seq), hash: row.anchor_hash };
}

/** What one purge call removed, the anchor after it, and the row it stopped at for not being intact or chained. */
export interface AuditPurge {
  readonly removed: number;
  readonly anchorSeq: number;
  readonly anchorHash: Buffer;
  readonly blockedAt: number | null;
}

/**
 * Removes up to `limit` of the oldest rows made before `cutoff` (never one younger than 30 days: the database
 * refuses), oldest first, through the database's purge_audit_events(): the only path by which a row leaves.
 * Purges take turns: each first takes the chain's row lock, which every insert and delete of the trail takes too,
 * and keeps it to the end of the caller's transaction. Two purges that both read the rows due before either
 * deleted would otherwise each count the same rows, and the second would stop at a row the first had just
 * removed as if it were not chained to the anchor (a false blocked_at).
 */
export function purgeAuditEvents(knex: Knex, cutoff: Date, limit: number): Promise<AuditPurge> {
  return knex.transaction(async (trx) => {
    await runSql(trx, sql`SELECT 1 FROM audit_chain WHERE one FOR UPDATE`);
    const [row] = await runSql<{ removed: number; anchor_seq: number; anchor_hash: Buffer; blocked_at: number | null }>(
      trx,
      sql`SELECT removed, anchor_seq, anchor_hash, blocked_at
        FROM purge_audit_events(${cutoff.toISOString()}::timestamptz, ${limit})`,
    );
    return { removed: row.removed, anchorSeq: row.anchor_seq, anchorHash: row.anchor_hash, blockedAt: row.blocked_at };
  });
}
