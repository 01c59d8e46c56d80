import type { Knex } from 'knex';
import { runSql, sql } from '../../db/sql';

// The partner's health figures (GET /partner/v1/health) over its app's companies, read from the rows: attempts
// started in a window (on webhook_attempts_started, migration 031) and the backlog of pending webhooks now.

/** What the attempts started in one window came to. */
export interface AttemptWindow {
  readonly attempts: number;
  /** Attempts that succeeded: each is one webhook delivered. */
  readonly delivered: number;
  /** Attempts that did not succeed (an answer that was not a success, or none). */
  readonly failed: number;
  /** Webhooks whose last attempt failed finally, finished in the window. */
  readonly webhooks_failed: number;
  /** Of the attempts your endpoint answered (any status), the answer time's median and 95th percentile (ms). */
  readonly answer_ms_p50: number | null;
  readonly answer_ms_p95: number | null;
}

/** The attempts of the last hour and the last 24 hours, by PostgreSQL's clock. */
export async function attemptWindows(
  knex: Knex,
  companyIds: readonly string[],
): Promise<{ last_hour: AttemptWindow; last_24_hours: AttemptWindow }> {
  const rows = await runSql<AttemptWindow & { label: 'last_hour' | 'last_24_hours' }>(
    knex,
    sql`SELECT w.label, count(a.webhook_id)::int AS attempts,
               (count(*) FILTER (WHERE a.succeeded))::int AS delivered,
               (count(*) FILTER (WHERE NOT a.succeeded))::int AS failed,
               (SELECT count(*)::int FROM webhook_events f WHERE f.status = 'failed'
                   AND f.finished_at >= now() - w.span AND f.company_id = ANY(${[...companyIds]}::text[]))
                 AS webhooks_failed,
               percentile_disc(0.5) WITHIN GROUP (ORDER BY a.duration_ms)
                 FILTER (WHERE a.http_status IS NOT NULL) AS answer_ms_p50,
               percentile_disc(0.95) WITHIN GROUP (ORDER BY a.duration_ms)
                 FILTER (WHERE a.http_status IS NOT NULL) AS answer_ms_p95
          FROM (VALUES ('last_hour', interval '1 hour'), ('last_24_hours', interval '24 hours')) w(label, span)
          LEFT JOIN (webhook_attempts a JOIN webhook_events e ON e.id = a.webhook_id
                     AND e.company_id = ANY(${[...companyIds]}::text[]))
            ON a.started_at >= now() - w.span
         GROUP BY w.label, w.span`,
  );
  const window = (label: string): AttemptWindow => {
    const { label: _label, ...figures } = rows.find((row) => row.label === label)!;
    return figures;
  };
  return { last_hour: window('last_hour'), last_24_hours: window('last_24_hours') };
}

/** One hour of the last 24 (from `hour`, by PostgreSQL's clock), for the portal's chart. */
export interface AttemptHour {
  readonly hour: Date;
  readonly attempts: number;
  readonly delivered: number;
  readonly failed: number;
  readonly answer_ms_p50: number | null;
  readonly answer_ms_p95: number | null;
}

/** The attempts of each of the last 24 clock hours, the current one last (partly over), oldest first. */
export async function attemptHours(knex: Knex, companyIds: readonly string[]): Promise<AttemptHour[]> {
  return runSql<AttemptHour>(
    knex,
    sql`SELECT h.hour, count(a.webhook_id)::int AS attempts,
               (count(*) FILTER (WHERE a.succeeded))::int AS delivered,
               (count(*) FILTER (WHERE NOT a.succeeded))::int AS failed,
               percentile_disc(0.5) WITHIN GROUP (ORDER BY a.duration_ms)
                 FILTER (WHERE a.http_status IS NOT NULL) AS answer_ms_p50,
               percentile_disc(0.95) WITHIN GROUP (ORDER BY a.duration_ms)
                 FILTER (WHERE a.http_status IS NOT NULL) AS answer_ms_p95
          FROM generate_series(date_trunc('hour', now()) - interval '23 hours', date_trunc('hour', now()),
                               interval '1 hour') h(hour)
          LEFT JOIN (webhook_attempts a JOIN webhook_events e ON e.id = a.webhook_id
                     AND e.company_id = ANY(${[...companyIds]}::text[]))
            ON a.started_at >= h.hour AND a.started_at < h.hour + interval '1 hour'
         GROUP BY h.hour
         ORDER BY h.hour`,
  );
}

/** The app's pending webhooks now. */
export interface Backlog {
  /** Every pending webhook (not delivered, failed or cancelled yet), whatever holds it. */
  readonly pending: number;
  /** Of those, queued behind an earlier unsettled webhook of their ordering key. */
  readonly queued: number;
  /** Of those, held by the partner gate (their claim found it closed). */
  readonly held: number;
  /** Seconds since the oldest pending webhook was accepted; null without one. */
  readonly oldest_pending_age_seconds: number | null;
}

export async function backlogOf(knex: Knex, companyIds: readonly string[]): Promise<Backlog> {
  const [row] = await runSql<Backlog>(
    knex,
    sql`SELECT count(*)::int AS pending,
               (count(*) FILTER (WHERE EXISTS (
                 SELECT 1 FROM ordering_places p JOIN ordering_places q ON q.lane_id = p.lane_id AND q.seq < p.seq
                  WHERE p.webhook_id = e.id AND p.settled_at IS NULL AND q.settled_at IS NULL)))::int AS queued,
               (count(*) FILTER (WHERE e.held_since IS NOT NULL))::int AS held,
               floor(extract(epoch FROM now() - min(e.accepted_at)))::int AS oldest_pending_age_seconds
          FROM webhook_events e
         WHERE e.status = 'pending' AND e.company_id = ANY(${[...companyIds]}::text[])`,
  );
  return row;
}
