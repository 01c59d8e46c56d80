import type { Knex } from 'knex';
import { prepared, raw, runSql, sql } from '../../db/sql';
import { placeInLaneCtes } from '../ordering/lanes';
import { deleteEmptyLanes } from '../ordering/empty-lanes';
import { eventSubjectKeys } from '../../lib/subject-index';
import { bodyBinding, openText, sealText, storedBodyBinding, type DataAtRest } from '../../lib/at-rest';
import { refuseClearWriteIfKeyed } from '../personal-data/at-rest-settings';
import { indexKeysOf } from '../personal-data/subject-index-keys';
import {
  asStoredWebhook,
  newWebhookRow,
  STORED_WEBHOOK_COLUMNS,
  WebhookRowMissingError,
  type NewWebhook,
  type StoredWebhook,
  type StoredWebhookRow,
} from '../webhooks/webhook-rows';

// Ingestion's SQL: a new event claims its row, the call that started its run reports the start (the 202-or-200
// rule), a start that failed for certain forgets the row, and a redelivery writes its own. The rows are mapped
// by webhook-rows.ts; the attempt's claim and record (attempt-claim.ts, attempt-record.ts), the status view
// (webhook-view.ts), the delivery log (delivery-log.ts) and the partner gate (partner-gate.ts) are beside.

/**
 * Writes the row of a new webhook before its only attempt (send-test); false when its event_id (or the webhook
 * id derived from it) is known. Ingestion writes its rows with claimEvent, the worker with claimAttempt.
 */
export async function insertWebhook(knex: Knex, atRest: DataAtRest, webhook: NewWebhook): Promise<boolean> {
  await refuseClearWriteIfKeyed(knex, atRest);
  const row = newWebhookRow(webhook, false, atRest, (await indexKeysOf(knex, atRest)).writeWith);
  // No conflict target: webhook_id derives from event_id, so a concurrent twin can clash on either key.
  const inserted = await runSql(
    knex,
    sql`INSERT INTO webhook_events (${row.columns}) VALUES (${row.values}) ON CONFLICT DO NOTHING RETURNING id`,
  );
  return inserted.length === 1;
}

/**
 * Where an event stands before its start: reported (a call answered 202 with its run, so this one answers
 * 200 and starts nothing), to be started (this call's row, or one whose earlier start failed, is in doubt or
 * is under way: the stored event is what is delivered), or gone (a concurrent call's failed start removed the
 * row between our insert's conflict and our read).
 */
export type EventClaim =
  | { readonly kind: 'reported'; readonly webhook: StoredWebhook & { readonly runId: string } }
  | { readonly kind: 'start'; readonly webhook: StoredWebhook }
  | { readonly kind: 'gone' };

/**
 * Claims an event id for ingestion in one statement: writes its row, or reads the one an earlier call wrote.
 * A row a concurrent call committed after this statement began is not seen: `gone`, and the caller asks again.
 */
export async function claimEvent(knex: Knex, atRest: DataAtRest, webhook: NewWebhook): Promise<EventClaim> {
  await refuseClearWriteIfKeyed(knex, atRest);
  const indexKeys = await indexKeysOf(knex, atRest);
  const row = newWebhookRow(webhook, false, atRest, indexKeys.writeWith);
  // An ordered webhook takes its place in its key's lane in this same statement (store/ordering/lanes.ts), and
  // the lane learns its subjects.
  const placing =
    webhook.orderingKey === undefined
      ? raw('')
      : sql`, ${placeInLaneCtes(
          atRest,
          indexKeys,
          webhook.orderingKey,
          eventSubjectKeys(indexKeys.writeWith.key, webhook.event),
        )}`;
  const [found] = await runSql<StoredWebhookRow>(
    knex,
    prepared(
      webhook.orderingKey === undefined ? 'claim-event' : 'claim-ordered-event',
      sql`WITH created AS (
        INSERT INTO webhook_events (${row.columns}) VALUES (${row.values}) ON CONFLICT DO NOTHING
          RETURNING ${STORED_WEBHOOK_COLUMNS}
      )${placing}
      SELECT * FROM created
      UNION ALL
      SELECT ${STORED_WEBHOOK_COLUMNS} FROM webhook_events
       WHERE event_id = ${webhook.eventId} AND redelivery_of IS NULL AND NOT EXISTS (SELECT 1 FROM created)`,
    ),
  );
  if (!found) return { kind: 'gone' };
  const stored = asStoredWebhook(found, atRest);
  if (stored.startReported && stored.runId) return { kind: 'reported', webhook: { ...stored, runId: stored.runId } };
  return { kind: 'start', webhook: stored };
}

/**
 * Records the run Temporal has for a webhook's start: the one UPDATE of its run id besides the worker's claim
 * (eager start hands the first attempt to the worker before the start call returns). With `reported`, the
 * 202-or-200 rule in one place: the start is marked reported, and the answer is whether this call is the first
 * to report it, so exactly one call answers 202. Without (the status URL, the resolution of a start in doubt):
 * whether this call recorded the run, false when one was there.
 */
export async function recordRun(
  knex: Knex,
  webhookId: string,
  runId: string,
  { reported = false } = {},
): Promise<boolean> {
  const statement = reported
    ? prepared(
        'report-start',
        sql`UPDATE webhook_events SET run_id = COALESCE(run_id, ${runId}), start_reported = true, updated_at = now()
             WHERE id = ${webhookId} AND NOT start_reported RETURNING id`,
      )
    : sql`UPDATE webhook_events SET run_id = ${runId}, updated_at = now() WHERE id = ${webhookId} AND run_id IS NULL
      RETURNING id`;
  return (await runSql(knex, statement)).length === 1;
}

/**
 * Removes the row of a webhook whose start failed for certain (true when it did), unless a start was reported or
 * anything was recorded for it since (a run the worker found writes its row again in its claim). Its place goes with
 * it, and its lane too when that was its only place.
 */
export async function forgetUnstartedWebhook(knex: Knex, webhookId: string): Promise<boolean> {
  const deleted = await runSql<{ lane_id: string | null }>(
    knex,
    sql`WITH gone AS (
          DELETE FROM webhook_events e
           WHERE e.id = ${webhookId} AND e.run_id IS NULL AND NOT e.start_reported AND e.claimed_attempt = 0
             AND NOT EXISTS (SELECT 1 FROM webhook_attempts a WHERE a.webhook_id = e.id) RETURNING e.id
        )
        SELECT p.lane_id::text FROM gone LEFT JOIN ordering_places p ON p.webhook_id = gone.id`,
  );
  await deleteEmptyLanes(
    knex,
    deleted.flatMap((row) => (row.lane_id ? [row.lane_id] : [])),
  );
  return deleted.length === 1;
}

/**
 * A redelivery's row: the original's event, byte for byte (in clear as it rests, or sealed again for the
 * redelivery's own id), under a new id and workflow.
 */
export interface NewRedelivery {
  readonly webhookId: string;
  readonly workflowId: string;
  /** The first webhook of the event: every redelivery points at it, never at another redelivery. */
  readonly originalId: string;
  /** At most one redelivery per original and key: a repeated bulk redelivery finds the one it made. */
  readonly key: string;
}

/**
 * The original's sealed body opened and sealed again bound to the redelivery's own row (`webhookId`); nulls when the
 * original's body rests in clear (the statement copies it).
 */
export function resealedBody(
  atRest: DataAtRest,
  originalId: string,
  source: { body_sealed: Buffer | null; body_key_id: string | null; redelivery_of: string | null },
  webhookId: string,
): { sealed: Buffer | null; keyId: string | null } {
  const text =
    source.body_sealed &&
    openText(
      atRest,
      { clear: null, sealed: source.body_sealed, keyId: source.body_key_id },
      storedBodyBinding(originalId, source.redelivery_of, source.body_key_id),
    );
  return text ? sealText(atRest, text, bodyBinding(webhookId)) : { sealed: null, keyId: null };
}

/**
 * The redelivery of `originalId` under `key`: the one this call wrote, or the one an earlier call did. An
 * original whose body was removed has nothing to redeliver: no row is written for it. A sealed body is opened and
 * sealed again bound to the redelivery's own row, never copied: a body names its own row only (lib/at-rest.ts);
 * the original's row is read FOR SHARE, so neither a reseal nor an erasure changes it between the read and the write.
 */
export async function insertRedelivery(
  knex: Knex,
  atRest: DataAtRest,
  redelivery: NewRedelivery,
): Promise<{ webhookId: string; workflowId: string; runId: string | null; startReported: boolean }> {
  const { webhookId, workflowId, originalId, key } = redelivery;
  const rows = await knex.transaction(async (trx) => {
    const [source] = await runSql<{
      body_sealed: Buffer | null;
      body_key_id: string | null;
      redelivery_of: string | null;
    }>(
      trx,
      sql`SELECT body_sealed, body_key_id, redelivery_of FROM webhook_events WHERE id = ${originalId}
        AND payload_removed_at IS NULL FOR SHARE`,
    );
    if (!source) return [];
    const sealed = resealedBody(atRest, originalId, source, webhookId);
    return runSql<{ id: string }>(
      trx,
      sql`INSERT INTO webhook_events (id, event_id, event_type, action, company_id, body, body_sealed, body_key_id,
        subject_keys, subject_key_id, accepted_at, workflow_id, redelivery_of, redelivery_key)
       SELECT ${webhookId}, event_id, event_type, action, company_id, body, ${sealed.sealed}::bytea,
         ${sealed.keyId}::text,
              subject_keys, subject_key_id, accepted_at, ${workflowId}, id, ${key}
         FROM webhook_events WHERE id = ${originalId}
       ON CONFLICT (redelivery_of, redelivery_key) DO NOTHING RETURNING id`,
    );
  });
  if (rows.length === 1) return { webhookId, workflowId, runId: null, startReported: false };
  const [existing] = await runSql<{ id: string; workflow_id: string; run_id: string | null; start_reported: boolean }>(
    knex,
    sql`SELECT id, workflow_id, run_id, start_reported FROM webhook_events WHERE redelivery_of = ${originalId}
      AND redelivery_key = ${key}`,
  );
  if (!existing) throw new WebhookRowMissingError(originalId);
  return {
    webhookId: existing.id,
    workflowId: existing.workflow_id,
    runId: existing.run_id,
    startReported: existing.start_reported,
  };
}
