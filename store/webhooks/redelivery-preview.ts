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
  files:
    `jsonb_typeof(c -> 'files') = 'object' AND EXISTS (SELECT 1 FROM jsonb_each(c -> 'files') f WHERE ` +
    `jsonb_typeof(f.value) = 'string')`,
  file_answers:
    `jsonb_typeof(c -> 'answers') = 'array' AND EXISTS (SELECT 1 FROM jsonb_array_elements(c -> 'answers') a(v) ` +
    `WHERE jsonb_typeof(a.v) = 'object' AND a.v ->> 'answer_type' = 'file')`,
};
const KINDS = Object.keys(KIND_IN_BODY) as SignedLinkKind[];

/**
 * A JS Date reads timestamptz to the millisecond, truncated: the deadlines are compared as signedLinkDeadlines does.
 */
const deadline = (kind: SignedLinkKind): SqlFragment =>
  sql`date_trunc('milliseconds', w.accepted_at) + ${`${SIGNED_LINK_LIFETIMES_MS[kind]} milliseconds`}::interval`;
const SHORTEST = KINDS.reduce((a, b) => (SIGNED_LINK_LIFETIMES_MS[a] <= SIGNED_LINK_LIFETIMES_MS[b] ? a : b));
/** Before the shortest deadline no link is dead, so a body is read only after it. */
const pastShortest = (at: string) => sql`${at}::timestamptz > ${deadline(SHORTEST)}`;

/**
 * Whether the original (alias `w`: its id, accepted_at, whether it is sealed; its candidate in `c`) has a kind of
 * link past its deadline at `at`. A sealed body cannot be read here: the caller opens those (windowOriginals).
 */
function linksExpired(at: string): SqlFragment {
  const clear = joinSql(
    KINDS.map((kind) => sql`(${at}::timestamptz > ${deadline(kind)} AND ${raw(KIND_IN_BODY[kind])})`),
    ' OR ',
  );
  return sql`(${pastShortest(at)} AND NOT w.sealed AND COALESCE(jsonb_typeof(c) = 'object' AND (${clear}), false))`;
}

/** A sealed original old enough for a dead link: its fate is unknown until the caller opens it. */
const unopened = (at: string): SqlFragment => sql`(w.sealed AND ${pastShortest(at)})`;

/** An original's fate, as SQL decides it; `sealed`: its body must be opened to tell its links. */
export type OriginalFate = 'start' | 'expired_links' | 'payload_removed' | 'sealed';

/** One original among the newest matches: where its first and last match are, and its fate. */
export interface WindowOriginal {
  readonly id: string;
  readonly first_pos: number;
  readonly last_pos: number;
  readonly fate: OriginalFate;
}

export interface WindowRequest {
  readonly filter: WebhookFilter;
  /** The bulk redelivery's key (bulkRedeliveryKey): originals already redelivered under it are no candidates. */
  readonly key: string;
  /** The clock, as an ISO date-time; null: links past their deadline do not matter (allow_expired_links). */
  readonly at: string | null;
  /** Whether sealed bodies can be opened (keys are set): without, a sealed one is counted as a start. */
  readonly opensSealed: boolean;
  /** How many of the newest matches are read: the statement's cost follows it, not the table. */
  readonly window: number;
}

/**
 * The originals of the newest `window` matches, in the redelivery's order (the position of their first match),
 * each with its fate as far as SQL can tell it: a removed body first, then dead links in a clear body; a sealed
 * one old enough for a dead link is left to the caller. A first match inside a newest-first window is the
 * original's first anywhere, so the caller can replay the redelivery's walk up to its stop exactly.
 * `exhausted`: the window held every match.
 */
export async function windowOriginals(
  knex: Knex,
  { filter, key, at, opensSealed, window }: WindowRequest,
): Promise<{ originals: WindowOriginal[]; exhausted: boolean }> {
  const expired = at === null ? raw('false') : linksExpired(at);
  const unknown = at === null || !opensSealed ? raw('false') : unopened(at);
  // The candidate of a clear body read after the shortest deadline, the body parsed once into jsonb (OFFSET 0
  // keeps the subquery whole): json's operators would parse the text again at each call. jsonb keeps a repeated key's
  // last value, as JSON.parse does, and ingestion refuses the NUL characters jsonb would refuse (unstorableTextErrors).
  const candidate =
    at === null
      ? raw('SELECT NULL::jsonb AS c')
      : sql`SELECT w.body::jsonb -> 'data' -> 'candidate' AS c
    WHERE w.body IS NOT NULL AND ${pastShortest(at)} OFFSET 0`;
  const rows = await runSql<WindowOriginal & { matched: number }>(
    knex,
    // An original that matches itself (nearly every one) is read with its match: only the originals of matching
    // redeliveries are looked up again. The window is read newest first through the same index as the
    // redelivery's candidate queries, and stops at `window` rows.
    sql`WITH matches AS (
          SELECT e.original_id, row_number() OVER (ORDER BY ${NEWEST_FIRST_ORDER}) AS pos, e.own, e.id,
            e.payload_removed_at, e.accepted_at, e.sealed, e.body
            FROM (SELECT ${ORIGINAL_ID} AS original_id, e.redelivery_of IS NULL AS own, e.id, e.created_at,
              e.payload_removed_at, e.accepted_at,
                         e.body_sealed IS NOT NULL AS sealed, e.body
                    FROM webhook_events e WHERE ${redeliveryCandidateConditions(filter, key)}
                   ORDER BY ${NEWEST_FIRST_ORDER} LIMIT ${window}) e
        ), originals AS (
          SELECT original_id, min(pos) AS first_pos, max(pos) AS last_pos, bool_or(own) AS matched FROM matches
            GROUP BY original_id
        ), sources AS (
          SELECT id, payload_removed_at, accepted_at, sealed, body FROM matches WHERE own
          UNION ALL
          SELECT w.id, w.payload_removed_at, w.accepted_at, w.body_sealed IS NOT NULL, w.body FROM webhook_events w
           WHERE w.id IN (SELECT original_id FROM originals WHERE NOT matched)
        )
        SELECT o.original_id AS id, o.first_pos::int AS first_pos, o.last_pos::int AS last_pos,
               CASE WHEN w.payload_removed_at IS NOT NULL THEN 'payload_removed' WHEN ${unknown} THEN 'sealed'
                    WHEN ${expired} THEN 'expired_links' ELSE 'start' END AS fate,
               (SELECT count(*) FROM matches)::int AS matched
          FROM originals o JOIN sources w ON w.id = o.original_id LEFT JOIN LATERAL (${candidate}) b ON true
         ORDER BY o.first_pos`,
  );
  const matched = rows[0]?.matched ?? 0;
  return {
    originals: rows.map(({ id, first_pos, last_pos, fate }) => ({ id, first_pos, last_pos, fate })),
    exhausted: matched < window,
  };
}

/** The rows of sealed originals to open (as findWebhookById reads them): PostgreSQL holds no key. */
export function findOriginals(knex: Knex, ids: readonly string[]): Promise<StoredWebhookRow[]> {
  return runSql<StoredWebhookRow>(
    knex,
    sql`SELECT ${STORED_WEBHOOK_COLUMNS} FROM webhook_events w WHERE w.id = ANY(${ids}::uuid[])`,
  );
}
