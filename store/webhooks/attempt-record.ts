import type { Knex } from 'knex';
import { prepared, raw, runSql, sql, type SqlFragment } from '../../db/sql';
import type { DataAtRest } from '../../lib/at-rest';
import type { RecordAttemptInput, RecordOutcomeInput, StoppedStatus, WebhookRef } from '../../lib/delivery';
import { refuseClearWriteIfKeyed } from '../personal-data/at-rest-settings';
import { feedGate, gateChange, type FedGateRow, type GateChange, type GateFeedback } from '../partner/partner-gate';
import { attemptRow, setRunIds, WebhookRowMissingError } from './webhook-rows';

// The attempt's record: each attempt's outcome, with the webhook's final status when it ends the delivery, and
// the final status alone when no attempt's record carried it.

/** How a webhook ended, when an attempt's record also finishes it. */
export interface WebhookFinish {
  readonly status: StoppedStatus;
  readonly finishedAt: string;
}

/**
 * Every attempt's record, in one round trip: the row's ids (and, with `finish`, its final status), the attempt
 * inserted only when the row exists, and, with `feedback`, the gate fed with its outcome. Idempotent on
 * (webhook, attempt): a retried call after a lost reply finds the attempt and changes nothing. Data-modifying
 * CTEs all run, in one snapshot, atomically.
 */
export async function storeAttempt(
  knex: Knex,
  atRest: DataAtRest,
  { webhook, attempt }: RecordAttemptInput,
  finish?: WebhookFinish,
  feedback?: GateFeedback,
): Promise<GateChange> {
  await refuseClearWriteIfKeyed(knex, atRest);
  const [{ found, ...fed }] = await runSql<FedGateRow & { found: number }>(
    knex,
    recordStatement(atRest, { webhook, attempt }, finish, feedback),
  );
  if (found === 0) throw new WebhookRowMissingError(webhook.webhookId);
  return gateChange(fed);
}

/**
 * The record's one statement, with the partner gate's CTE (feedGate, store/partner/partner-gate.ts) spliced in.
 * Printed whole, as PostgreSQL receives it, in docs/sql/attempt-record.md
 * (test/unit/webhooks/attempt-statements.test.ts).
 */
export function recordStatement(
  atRest: DataAtRest,
  { webhook, attempt }: RecordAttemptInput,
  finish?: WebhookFinish,
  feedback?: GateFeedback,
): SqlFragment {
  const finishing = finish
    ? sql`, status = ${unlessErased(finish.status)},
             finished_at = COALESCE(finished_at, ${finish.finishedAt}::timestamptz)`
    : raw('');
  // An attempt in flight when an erasure removed the payload: its outcome is kept, its excerpt is not.
  const recorded = attemptRow(webhook, attempt, atRest, raw('row.keeps_payload'));
  return prepared(
    finish ? 'record-attempt-and-finish' : 'record-attempt',
    sql`WITH row AS (
      UPDATE webhook_events SET ${setRunIds(webhook)}${finishing}
       WHERE id = ${webhook.webhookId}
      RETURNING id, payload_removed_at IS NULL AS keeps_payload
    ), recorded AS (
      INSERT INTO webhook_attempts (webhook_id, ${recorded.columns})
      SELECT id, ${recorded.values} FROM row
      ON CONFLICT (webhook_id, attempt) DO NOTHING
      RETURNING webhook_id
    ), fed AS (
      ${feedGate(feedback, raw('EXISTS (SELECT 1 FROM recorded)'))}
    )
    SELECT count(*)::int AS found, (SELECT tripped FROM fed) AS tripped,
           (SELECT throttled_until FROM fed) AS throttled_until
      FROM row`,
  );
}

/** The status a record writes, unless an erasure cancelled the delivery: that status and its reason stay. */
const unlessErased = (status: StoppedStatus) =>
  sql`CASE WHEN status_reason = 'erasure' THEN status ELSE ${status}::text END`;

/** A webhook's final status, when no attempt's record carried it. Idempotent: the first recorded finish time stays. */
export async function storeOutcome(knex: Knex, { webhook, status, finishedAt }: RecordOutcomeInput): Promise<void> {
  const rows = await runSql(
    knex,
    sql`UPDATE webhook_events
           SET ${setRunIds(webhook)}, status = ${unlessErased(status)},
               finished_at = COALESCE(finished_at, ${finishedAt}::timestamptz)
         WHERE id = ${webhook.webhookId} RETURNING id`,
  );
  if (rows.length === 0) throw new WebhookRowMissingError(webhook.webhookId);
}

/**
 * The final status of an ordered head whose run ended without recording one (the ordering sweep, an operator's
 * skip). A status already recorded stays. A run stopped from outside records `stopped`; a run that completed or
 * failed on its own delivered the webhook when one of its recorded attempts succeeded, else it failed. Returns the
 * row's final status; undefined when the row is gone.
 */
export async function storeEndOfRun(
  knex: Knex,
  webhook: Pick<WebhookRef, 'webhookId' | 'workflowId' | 'runId'>,
  stopped: 'cancelled' | 'terminated' | undefined,
  finishedAt: string,
): Promise<StoppedStatus | undefined> {
  const [row] = await runSql<{ status: StoppedStatus }>(
    knex,
    sql`UPDATE webhook_events e SET ${setRunIds(webhook, 'e')},
               status = CASE WHEN e.status <> 'pending' THEN e.status
                             WHEN ${stopped ?? null}::text IS NOT NULL THEN ${stopped ?? null}::text
                             WHEN EXISTS (SELECT 1 FROM webhook_attempts a WHERE a.webhook_id = e.id AND a.succeeded)
                             THEN 'delivered'
                             ELSE 'failed' END,
               finished_at = COALESCE(e.finished_at, ${finishedAt}::timestamptz)
         WHERE e.id = ${webhook.webhookId} RETURNING e.status`,
  );
  return row?.status;
}
