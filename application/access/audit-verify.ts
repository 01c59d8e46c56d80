import { createHash } from 'node:crypto';
import type { Knex } from 'knex';
import {
  chainedRowsAfter,
  readChainEnds,
  recordedAnchor,
  rowsBeforeAnchor,
  type ChainedRow,
} from '../../store/access/audit-chain';

// `partner-service audit verify` and GET /internal/v1/audit/verify: walks the audit trail's hash chain from the
// anchor to the head, recomputing every row's hash in this process, and names what is missing, edited or
// out of place (docs/access.md, "Audit trail: verifying it").

/** Rows read per query: memory stays flat whatever the trail's length. */
const BATCH = 5_000;
/** Problems listed in full; past it they are only counted. */
const MAX_LISTED = 100;

/** What `audit verify` can find: rows missing, edited or out of place, and ends that disagree with the rows. */
export const CHAIN_PROBLEM_KINDS = [
  'missing',
  'edited',
  'reordered',
  'head_mismatch',
  'anchor_unrecorded',
  'before_anchor',
] as const;
export type ChainProblemKind = (typeof CHAIN_PROBLEM_KINDS)[number];

/** One break in the chain, at its position (seq). */
export interface ChainProblem {
  readonly kind: ChainProblemKind;
  readonly position: number;
  /** The row's id, where there is a row. */
  readonly id: number | null;
  readonly detail: string;
}

/** What `audit verify` prints and the API answers; `intact` decides the exit code (0, else 1). */
export interface ChainReport {
  readonly intact: boolean;
  readonly rows: number;
  /** The last row purged: the chain starts after it. */
  readonly anchor: { readonly seq: number; readonly hash: string };
  /** The last row: keep it elsewhere to check later that the trail still extends it. */
  readonly head: { readonly seq: number; readonly hash: string };
  readonly first_problem: ChainProblem | null;
  readonly problems: readonly ChainProblem[];
  readonly problems_total: number;
}

const hex = (bytes: Buffer) => bytes.toString('hex');
const rowHash = (row: ChainedRow) => createHash('sha256').update(row.prev_hash).update(row.content, 'utf8').digest();

/** Walks the whole chain; reads only, in batches of BATCH rows. */
export async function verifyAuditTrail(knex: Knex): Promise<ChainReport> {
  const ends = await readChainEnds(knex);
  const problems: ChainProblem[] = [];
  let total = 0;
  const report = (problem: ChainProblem) => {
    total += 1;
    if (problems.length < MAX_LISTED) problems.push(problem);
  };

  for (const seq of await rowsBeforeAnchor(knex, ends.anchorSeq)) {
    report({
      kind: 'before_anchor',
      position: seq,
      id: null,
      detail: `a row is placed at ${seq}, at or before the anchor (${ends.anchorSeq}): rows there were purged`,
    });
  }
  const recorded = await recordedAnchor(knex);
  const anchorHex = hex(ends.anchorHash);
  const anchorExpected = recorded ?? { seq: 0, hash: '0'.repeat(64) };
  if (anchorExpected.seq !== ends.anchorSeq || anchorExpected.hash !== anchorHex) {
    report({
      kind: 'anchor_unrecorded',
      position: ends.anchorSeq,
      id: null,
      detail:
        `the anchor (${ends.anchorSeq}) is not the one the last audit.purge row recorded ` +
        `(${anchorExpected.seq}): rows were removed outside the purge`,
    });
  }

  let rows = 0;
  let expectedSeq = ends.anchorSeq + 1;
  /** The hash the next row must link to; null right after a gap, whose rows are already reported. */
  let expectedPrev: Buffer | null = ends.anchorHash;
  let last: ChainedRow | undefined;
  /** A swapped pair's second row, when it was read from the next batch ahead of its turn. */
  let doneThrough = ends.anchorSeq;
  let batch = await chainedRowsAfter(knex, ends.anchorSeq, BATCH);
  while (batch.length) {
    const next = batch.length === BATCH ? await chainedRowsAfter(knex, batch[batch.length - 1].seq, BATCH) : [];
    for (let i = 0; i < batch.length; i += 1) {
      const row = batch[i];
      if (row.seq <= doneThrough) continue;
      rows += 1;
      if (row.seq > expectedSeq) {
        const span =
          row.seq - expectedSeq === 1 ? `row ${expectedSeq} is` : `rows ${expectedSeq} to ${row.seq - 1} are`;
        report({
          kind: 'missing',
          position: expectedSeq,
          id: null,
          detail: `${span} missing: deleted outside the purge`,
        });
        expectedPrev = null;
      }
      if (!rowHash(row).equals(row.hash)) {
        report({
          kind: 'edited',
          position: row.seq,
          id: row.id,
          detail: `row ${row.seq} (id ${row.id}) does not match its hash: its content was changed`,
        });
      } else if (expectedPrev && !row.prev_hash.equals(expectedPrev)) {
        const following = batch[i + 1] ?? next[0];
        // Two rows in each other's place: each links to what the other should.
        if (
          following &&
          following.seq === row.seq + 1 &&
          row.prev_hash.equals(following.hash) &&
          following.prev_hash.equals(expectedPrev) &&
          rowHash(following).equals(following.hash)
        ) {
          const detail =
            `rows ${row.seq} (id ${row.id}) and ${following.seq} (id ${following.id}) ` + `are in each other's place`;
          report({ kind: 'reordered', position: row.seq, id: row.id, detail });
          report({ kind: 'reordered', position: following.seq, id: following.id, detail });
          rows += 1;
          i += 1;
          doneThrough = following.seq;
          last = following;
          expectedSeq = following.seq + 1;
          expectedPrev = row.hash;
          continue;
        }
        report({
          kind: 'reordered',
          position: row.seq,
          id: row.id,
          detail:
            `row ${row.seq} (id ${row.id}) is not chained to the row before it: rows were moved, or removed and ` +
            `renumbered`,
        });
      }
      last = row;
      expectedSeq = row.seq + 1;
      expectedPrev = row.hash;
    }
    batch = next;
  }

  const lastSeq = last?.seq ?? ends.anchorSeq;
  const lastHash = last?.hash ?? ends.anchorHash;
  if (lastSeq < ends.headSeq) {
    const span =
      lastSeq + 1 === ends.headSeq
        ? `row ${ends.headSeq} (the head) is`
        : `rows ${lastSeq + 1} to ${ends.headSeq} (the head) are`;
    report({
      kind: 'missing',
      position: lastSeq + 1,
      id: null,
      detail: `${span} missing: the newest rows were deleted`,
    });
  } else if (lastSeq !== ends.headSeq || !lastHash.equals(ends.headHash)) {
    report({
      kind: 'head_mismatch',
      position: lastSeq,
      id: last?.id ?? null,
      detail: `the last row (${lastSeq}) is not the chain's recorded head (${ends.headSeq})`,
    });
  }
  const ordered = [...problems].sort((a, b) => a.position - b.position);
  return {
    intact: total === 0,
    rows,
    anchor: { seq: ends.anchorSeq, hash: anchorHex },
    head: { seq: ends.headSeq, hash: hex(ends.headHash) },
    first_problem: ordered[0] ?? null,
    problems: ordered,
    problems_total: total,
  };
}
