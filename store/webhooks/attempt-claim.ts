import type { Knex } from 'knex';
import { prepared, runSql, sql, type SqlFragment } from '../../db/sql';
import type { DataAtRest } from '../../lib/at-rest';
import type { AttemptOutcome } from '../../lib/delivery';
import type { HoldState } from '../../lib/partner-states';
import type { SubjectIndexKey } from '../../lib/subject-index';
import { refuseClearWriteIfKeyed } from '../personal-data/at-rest-settings';
import {
  CLAIM_GATE_COLUMNS,
  claimGateCtes,
  ensureGate,
  slotWait,
  type ClaimGateRow,
  type GateClaim,
  type SlotWait,
} from '../partner/partner-gate';
import { indexKeysOf } from '../personal-data/subject-index-keys';
import {
  asAttemptOutcome,
  ATTEMPT_COLUMNS,
  newWebhookRow,
  openAttempt,
  setRunIds,
  type AttemptRow,
  type NewWebhook,
} from './webhook-rows';

// The attempt's claim: the one statement before each POST, in which the partner gate (store/partner/partner-gate.ts)
// decides whether the attempt goes now, waits for a send slot, or is held.

/**
 * An attempt that may be POSTed now (with the event's acceptance time, which dates its signed links), one that
 * was recorded already, or one an earlier try claimed and lost; or, before any claim: held by the partner gate,
 * given a send slot in the near future, or throttled (no slot within the horizon).
 */
export type AttemptClaim =
  | { readonly kind: 'claimed'; readonly acceptedAt: Date }
  | { readonly kind: 'recorded'; readonly outcome: AttemptOutcome }
  | { readonly kind: 'lost' }
  /** The row's payload was removed (an erasure cancelled the delivery): nothing may be sent. */
  | { readonly kind: 'erased' }
  | { readonly kind: 'held'; readonly state: HoldState; readonly pauseReason: string | null }
  | SlotWait;

/**
 * Claims attempt `attempt` before its POST, creating the row when the webhook carries its event. One statement
 * reads the partner gate, takes the deployment's next send slot and claims the attempt, or marks the delivery
 * held. Only the first try of an attempt gets the claim: a later one (after a lost worker or a timed-out try)
 * finds the recorded outcome, or else treats the attempt as lost, since its POST may have reached the partner.
 * A queue without a gate row yet gets one, and the claim runs again. A row whose payload was removed (an
 * erasure) is never claimed: `erased`.
 */
export async function claimAttempt(
  knex: Knex,
  atRest: DataAtRest,
  webhook: NewWebhook,
  attempt: number,
  gate: GateClaim,
): Promise<AttemptClaim> {
  await refuseClearWriteIfKeyed(knex, atRest);
  const indexKey = (await indexKeysOf(knex, atRest)).writeWith;
  const [claimed] = await runSql<ClaimRow>(knex, claimStatement(atRest, indexKey, webhook, attempt, gate));
  if (claimed.accepted_at) return { kind: 'claimed', acceptedAt: claimed.accepted_at };
  if (claimed.erased) return { kind: 'erased' };
  if (claimed.held) return { kind: 'held', state: claimed.state as HoldState, pauseReason: claimed.pause_reason };
  if (claimed.state === null) {
    await ensureGate(knex, gate.taskQueue);
    return claimAttempt(knex, atRest, webhook, attempt, gate);
  }
  return slotWait(claimed, gate) ?? earlierClaim(knex, atRest, webhook.webhookId, attempt);
}

/**
 * The claim's one statement, with the partner gate's CTEs (store/partner/partner-gate.ts) spliced in. Printed
 * whole, as PostgreSQL receives it, in docs/sql/attempt-claim.md (test/unit/webhooks/attempt-statements.test.ts).
 */
export function claimStatement(
  atRest: DataAtRest,
  indexKey: SubjectIndexKey,
  webhook: NewWebhook,
  attempt: number,
  gate: GateClaim,
): SqlFragment {
  // A run another Temporal client started has no row yet: the claim writes it, told of its start already.
  const row = newWebhookRow(webhook, true, atRest, indexKey);
  return prepared(
    'claim-attempt',
    sql`WITH ${claimGateCtes(gate)}, claim AS (
      INSERT INTO webhook_events AS e (${row.columns}, claimed_attempt, held_since, held_queue)
      SELECT ${row.values},
             CASE WHEN may_send THEN ${attempt}::smallint ELSE 0 END,
             CASE WHEN NOT open THEN date_trunc('milliseconds', clock_timestamp()) END,
             CASE WHEN NOT open THEN ${gate.taskQueue}::text END
        FROM may_send, open
      ON CONFLICT (id) DO UPDATE
         SET claimed_attempt = GREATEST(e.claimed_attempt, EXCLUDED.claimed_attempt), held_since = EXCLUDED.held_since,
             held_queue = COALESCE(EXCLUDED.held_queue, e.held_queue), ${setRunIds(webhook, 'e')}
       WHERE e.claimed_attempt < ${attempt}
         AND ((SELECT may_send FROM may_send) OR NOT (SELECT open FROM open))
         AND e.payload_removed_at IS NULL
      RETURNING accepted_at, claimed_attempt = ${attempt} AS claimed, held_since IS NOT NULL AS held
    )
    SELECT (SELECT accepted_at FROM claim WHERE claimed) AS accepted_at, ${CLAIM_GATE_COLUMNS},
           EXISTS (SELECT 1 FROM claim WHERE held) AS held,
           EXISTS (
             SELECT 1 FROM webhook_events WHERE id = ${webhook.webhookId}::uuid AND payload_removed_at IS NOT NULL
           ) AS erased`,
  );
}

interface ClaimRow extends ClaimGateRow {
  accepted_at: Date | null;
  held: boolean;
  erased: boolean;
}

/** An attempt claimed before this try: its recorded outcome, or lost (its POST may have reached the partner). */
async function earlierClaim(knex: Knex, atRest: DataAtRest, webhookId: string, attempt: number): Promise<AttemptClaim> {
  const [recorded] = await runSql<AttemptRow>(
    knex,
    sql`SELECT ${ATTEMPT_COLUMNS} FROM webhook_attempts WHERE webhook_id = ${webhookId} AND attempt = ${attempt}`,
  );
  return recorded
    ? { kind: 'recorded', outcome: asAttemptOutcome(openAttempt(atRest, webhookId, recorded)) }
    : { kind: 'lost' };
}
