import type { Knex } from 'knex';
import { joinSql, raw, runSql, sql, type SqlFragment } from '../../db/sql';
import { SIGNED_LINK_LIFETIMES_MS } from '../../events/signed-links';
import type { SignedLinkKind } from '../../lib/vocabulary';
import { NEWEST_FIRST_ORDER, ORIGINAL_ID, redeliveryCandidateConditions, type WebhookFilter } from './delivery-log';
import { STORED_WEBHOOK_COLUMNS, type StoredWebhookRow } from './webhook-rows';

// What a bulk redelivery would do, counted in SQL over the newest matches: the redelivery walks its candidates
// newest first (application/webhooks/webhook-operations.ts), so the count replays that walk, as far as it goes.

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

/** A sealed original old enough for a dead link, not opened yet: its fate is unknown until the caller opens it. */
const unopened = (at: string, opened: readonly string[]): SqlFragment =>
  sql`(w.sealed AND ${pastShortest(at)} AND NOT w.id = ANY(${opened}::uuid[]))`;

export interface RedeliveryCount {
  readonly would_start: number;
  readonly skipped_expired_links: number;
  readonly skipped_payload_removed: number;
  readonly more: boolean;
}

/** A count over the newest `window` matches, and whether it is the answer or the walk needs more. */
export interface WindowCount extends RedeliveryCount {
  /** The window held every match: nothing lies past it. */
  readonly exhausted: boolean;
  /** The `limit`-th start lies inside the window. */
  readonly reached: boolean;
  /**
   * Sealed originals the walk reaches (at or before its stop, counting each unknown one as a start) that are
   * not opened yet: the caller opens them and counts again. Empty: the counts are exact for the window.
   */
  readonly unopened: string[];
}

/** How sealed originals are told: the ones opened so far, and those of them whose links are dead. */
export interface SealedOpened {
  readonly opened: readonly string[];
  readonly expired: readonly string[];
}

export interface CountRequest {
  readonly filter: WebhookFilter;
  /** The bulk redelivery's key (bulkRedeliveryKey): originals already redelivered under it are no candidates. */
  readonly key: string;
  readonly limit: number;
  /** The clock, as an ISO date-time; null: links past their deadline do not matter (allow_expired_links). */
  readonly at: string | null;
  /** Sealed originals opened so far; null: none is opened (no key to open them), each counts as a start. */
  readonly sealed: SealedOpened | null;
  /** How many of the newest matches are read: the count's cost follows it, not the table. */
  readonly window: number;
}

/**
 * The redelivery's walk, in one statement, over the newest `window` matches: candidates newest first; each
 * original's fate decided at its first match (started, or skipped for a removed body, checked first, or dead
 * links); the walk stops at the `limit`-th start, and counts only the skips before it. `more`: a match is left
 * past that stop (inside the window) whose original was not started (the redelivery's last look, after its starts
 * took their originals out of the anti-join). A first match inside the window is an original's first anywhere,
 * so every count up to the stop is exact once no reached original is left unopened.
 */
export async function countRedelivery(knex: Knex, { filter, key, limit, at, sealed, window }: CountRequest): Promise<WindowCount> {
  const expired = at === null ? raw('false') : linksExpired(at, sealed?.expired ?? []);
  const unknown = at === null || sealed === null ? raw('false') : unopened(at, sealed.opened);
  // The candidate of a clear body read after the shortest deadline, the body parsed once into jsonb (OFFSET 0
  // keeps the subquery whole): json's operators would parse the text again at each call. jsonb keeps a repeated key's last value, as
  // JSON.parse does, and ingestion refuses the NUL characters jsonb would refuse (unstorableTextErrors).
  const candidate = at === null ? raw('SELECT NULL::jsonb AS c') : sql`SELECT w.body::jsonb -> 'data' -> 'candidate' AS c WHERE w.body IS NOT NULL AND ${pastShortest(at)} OFFSET 0`;
  const [row] = await runSql<WindowCount>(
    knex,
    // An original that matches itself (nearly every one) is read with its match: only the originals of matching
    // redeliveries are looked up again, so the count reads no index per match. The window is read newest first
    // through the same index as the redelivery's candidate queries, and stops at `window` rows.
    sql`WITH matches AS (
          SELECT e.original_id, row_number() OVER (ORDER BY ${NEWEST_FIRST_ORDER}) AS pos, e.own, e.id, e.payload_removed_at, e.accepted_at, e.sealed, e.body
            FROM (SELECT ${ORIGINAL_ID} AS original_id, e.redelivery_of IS NULL AS own, e.id, e.created_at, e.payload_removed_at, e.accepted_at,
                         e.body_sealed IS NOT NULL AS sealed, e.body
                    FROM webhook_events e WHERE ${redeliveryCandidateConditions(filter, key)}
                   ORDER BY ${NEWEST_FIRST_ORDER} LIMIT ${window}) e
        ), originals AS (
          SELECT original_id, min(pos) AS first_pos, max(pos) AS last_pos, bool_or(own) AS matched FROM matches GROUP BY original_id
        ), sources AS (
          SELECT id, payload_removed_at, accepted_at, sealed, body FROM matches WHERE own
          UNION ALL
          SELECT w.id, w.payload_removed_at, w.accepted_at, w.body_sealed IS NOT NULL, w.body FROM webhook_events w
           WHERE w.id IN (SELECT original_id FROM originals WHERE NOT matched)
        ), fates AS (
          SELECT o.original_id, o.first_pos, o.last_pos,
                 CASE WHEN w.payload_removed_at IS NOT NULL THEN 'payload_removed' WHEN ${unknown} THEN 'unknown'
                      WHEN ${expired} THEN 'expired_links' ELSE 'start' END AS fate
            FROM originals o JOIN sources w ON w.id = o.original_id LEFT JOIN LATERAL (${candidate}) b ON true
        ), stop AS (
          SELECT first_pos AS pos FROM fates WHERE fate IN ('start', 'unknown') ORDER BY first_pos OFFSET ${limit - 1} LIMIT 1
        ), bound AS (
          SELECT COALESCE((SELECT pos FROM stop), 9223372036854775807) AS pos, EXISTS (SELECT 1 FROM stop) AS reached
        )
        SELECT count(*) FILTER (WHERE f.fate IN ('start', 'unknown') AND f.first_pos <= b.pos)::int AS would_start,
               count(*) FILTER (WHERE f.fate = 'expired_links' AND f.first_pos < b.pos)::int AS skipped_expired_links,
               count(*) FILTER (WHERE f.fate = 'payload_removed' AND f.first_pos < b.pos)::int AS skipped_payload_removed,
               COALESCE(bool_or(b.reached AND f.last_pos > b.pos AND (f.fate <> 'start' OR f.first_pos > b.pos)), false) AS more,
               (SELECT count(*) FROM matches) < ${window} AS exhausted, bool_or(b.reached) AS reached,
               COALESCE(array_agg(f.original_id) FILTER (WHERE f.fate = 'unknown' AND f.first_pos <= b.pos), '{}') AS unopened
          FROM bound b LEFT JOIN fates f ON true`,
  );
  return row;
}

/** The rows of sealed originals to open (as findWebhookById reads them): PostgreSQL holds no key. */
export function findOriginals(knex: Knex, ids: readonly string[]): Promise<StoredWebhookRow[]> {
  return runSql<StoredWebhookRow>(knex, sql`SELECT ${STORED_WEBHOOK_COLUMNS} FROM webhook_events w WHERE w.id = ANY(${ids}::uuid[])`);
}
