import type { Knex } from 'knex';
import { joinSql, raw, runSql, sql, type SqlFragment } from '../../db/sql';
import { SIGNED_LINK_LIFETIMES_MS } from '../../events/signed-links';
import type { SignedLinkKind } from '../../lib/vocabulary';
import { NEWEST_FIRST_ORDER, ORIGINAL_ID, redeliveryCandidateConditions, type WebhookFilter } from './delivery-log';
import { STORED_WEBHOOK_COLUMNS, type StoredWebhookRow } from './webhook-rows';

// What a bulk redelivery would do, counted in one statement however many rows match: the redelivery walks its
// candidates newest first (application/webhooks/webhook-operations.ts), so the count replays that walk in SQL.

/** A clear body's candidate (`c`, jsonb): whether it carries each kind of signed link, as signedLinkKinds reads it. */
const KIND_IN_BODY: Readonly<Record<SignedLinkKind, string>> = {
  files: `jsonb_typeof(c -> 'files') = 'object' AND EXISTS (SELECT 1 FROM jsonb_each(c -> 'files') f WHERE jsonb_typeof(f.value) = 'string')`,
  file_answers: `jsonb_typeof(c -> 'answers') = 'array' AND EXISTS (SELECT 1 FROM jsonb_array_elements(c -> 'answers') a(v) WHERE jsonb_typeof(a.v) = 'object' AND a.v ->> 'answer_type' = 'file')`,
};
const KINDS = Object.keys(KIND_IN_BODY) as SignedLinkKind[];

/** A JS Date reads timestamptz to the millisecond, truncated: the deadlines are compared as signedLinkDeadlines does. */
const deadline = (kind: SignedLinkKind): SqlFragment => sql`date_trunc('milliseconds', w.accepted_at) + ${`${SIGNED_LINK_LIFETIMES_MS[kind]} milliseconds`}::interval`;
const SHORTEST = KINDS.reduce((a, b) => (SIGNED_LINK_LIFETIMES_MS[a] <= SIGNED_LINK_LIFETIMES_MS[b] ? a : b));
/** Before the shortest deadline no link is dead, so a body is read only after it. */
const pastShortest = (at: string) => sql`${at}::timestamptz > ${deadline(SHORTEST)}`;

/**
 * Whether the original (alias `w`: its id, accepted_at, whether it is sealed; its candidate in `c`) has a kind of link past its deadline at `at`. A sealed
 * body cannot be read here: the caller opens those and passes the ids of the ones with dead links.
 */
function linksExpired(at: string, sealedExpired: readonly string[]): SqlFragment {
  const clear = joinSql(KINDS.map((kind) => sql`(${at}::timestamptz > ${deadline(kind)} AND ${raw(KIND_IN_BODY[kind])})`), ' OR ');
  return sql`(${pastShortest(at)} AND CASE WHEN w.sealed THEN w.id = ANY(${sealedExpired}::uuid[])
                                          ELSE COALESCE(jsonb_typeof(c) = 'object' AND (${clear}), false) END)`;
}

export interface RedeliveryCount {
  readonly would_start: number;
  readonly skipped_expired_links: number;
  readonly skipped_payload_removed: number;
  readonly more: boolean;
}

export interface CountRequest {
  readonly filter: WebhookFilter;
  /** The bulk redelivery's key (bulkRedeliveryKey): originals already redelivered under it are no candidates. */
  readonly key: string;
  readonly limit: number;
  /** The clock, as an ISO date-time; null: links past their deadline do not matter (allow_expired_links). */
  readonly at: string | null;
  /** Originals with a sealed body whose links are past their deadline at `at`. */
  readonly sealedExpired: readonly string[];
}

/**
 * The redelivery's walk, in one statement: candidates newest first; each original's fate decided at its first
 * match (started, or skipped for a removed body, checked first, or dead links); the walk stops at the
 * `limit`-th start, and counts only the skips before it. `more`: a match is left past that stop whose original
 * was not started (the redelivery's last look, after its starts took their originals out of the anti-join).
 */
export async function countRedelivery(knex: Knex, { filter, key, limit, at, sealedExpired }: CountRequest): Promise<RedeliveryCount> {
  const expired = at === null ? raw('false') : linksExpired(at, sealedExpired);
  // The candidate of a clear body read after the shortest deadline, the body parsed once into jsonb (OFFSET 0
  // keeps the subquery whole): json's operators would parse the text again at each call. jsonb keeps a repeated key's last value, as
  // JSON.parse does, and ingestion refuses the NUL characters jsonb would refuse (unstorableTextErrors).
  const candidate = at === null ? raw('SELECT NULL::jsonb AS c') : sql`SELECT w.body::jsonb -> 'data' -> 'candidate' AS c WHERE w.body IS NOT NULL AND ${pastShortest(at)} OFFSET 0`;
  const [row] = await runSql<RedeliveryCount>(
    knex,
    // An original that matches itself (nearly every one) is read with its match: only the originals of matching
    // redeliveries are looked up again, so the count reads no index per match, whatever the table's size.
    sql`WITH matches AS (
          SELECT ${ORIGINAL_ID} AS original_id, row_number() OVER (ORDER BY ${NEWEST_FIRST_ORDER}) AS pos, e.redelivery_of IS NULL AS own,
                 e.id, e.payload_removed_at, e.accepted_at, e.body_sealed IS NOT NULL AS sealed, e.body
            FROM webhook_events e WHERE ${redeliveryCandidateConditions(filter, key)}
        ), originals AS (
          SELECT original_id, min(pos) AS first_pos, max(pos) AS last_pos, bool_or(own) AS matched FROM matches GROUP BY original_id
        ), sources AS (
          SELECT id, payload_removed_at, accepted_at, sealed, body FROM matches WHERE own
          UNION ALL
          SELECT w.id, w.payload_removed_at, w.accepted_at, w.body_sealed IS NOT NULL, w.body FROM webhook_events w
           WHERE w.id IN (SELECT original_id FROM originals WHERE NOT matched)
        ), fates AS (
          SELECT o.first_pos, o.last_pos,
                 CASE WHEN w.payload_removed_at IS NOT NULL THEN 'payload_removed' WHEN ${expired} THEN 'expired_links' ELSE 'start' END AS fate
            FROM originals o JOIN sources w ON w.id = o.original_id LEFT JOIN LATERAL (${candidate}) b ON true
        ), stop AS (
          SELECT first_pos AS pos FROM fates WHERE fate = 'start' ORDER BY first_pos OFFSET ${limit - 1} LIMIT 1
        ), bound AS (
          SELECT COALESCE((SELECT pos FROM stop), 9223372036854775807) AS pos, EXISTS (SELECT 1 FROM stop) AS reached
        )
        SELECT count(*) FILTER (WHERE f.fate = 'start' AND f.first_pos <= b.pos)::int AS would_start,
               count(*) FILTER (WHERE f.fate = 'expired_links' AND f.first_pos < b.pos)::int AS skipped_expired_links,
               count(*) FILTER (WHERE f.fate = 'payload_removed' AND f.first_pos < b.pos)::int AS skipped_payload_removed,
               COALESCE(bool_or(b.reached AND f.last_pos > b.pos AND (f.fate <> 'start' OR f.first_pos > b.pos)), false) AS more
          FROM bound b LEFT JOIN fates f ON true`,
  );
  return row;
}

/**
 * The originals among the candidates whose body is sealed and old enough for a link to be dead at `at`: their
 * rows as findWebhookById reads them, to open in the application (PostgreSQL holds no key).
 */
export function findSealedOriginals(knex: Knex, filter: WebhookFilter, key: string, at: string): Promise<StoredWebhookRow[]> {
  return runSql<StoredWebhookRow>(
    knex,
    sql`SELECT ${STORED_WEBHOOK_COLUMNS} FROM webhook_events w
         WHERE w.id IN (SELECT ${ORIGINAL_ID} FROM webhook_events e WHERE ${redeliveryCandidateConditions(filter, key)})
           AND w.body_sealed IS NOT NULL AND ${pastShortest(at)}`,
  );
}
