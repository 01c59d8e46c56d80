import type { Knex } from 'knex';
import { z } from 'zod';
import type { DataAtRest } from '../../lib/at-rest';
import type { BlockedDecision } from '../../lib/delivery';
import { zodPathErrors } from '../../lib/validation';
import { InvalidRequestError, UnknownOrderingKeyError, WebhookConflictError } from '../../lib/errors';
import { MAX_ORDERING_KEY_LENGTH } from '../../events/ordering-key';
import { headOfKey } from '../../store/ordering/lanes';
import type { TemporalGateway } from '../../temporal/gateway';
import { auditedCall, type OperatorContext } from '../access/audit';
import { settleEndedHead } from './ended-heads';

// An operator's skip or retry of a key's blocked head (WEBHOOK_ORDERING_ON_FAILURE=block), for
// POST /internal/v1/ordering/{skip,retry} and `partner-service ordering skip|retry KEY`.

/** The body of both routes: the key, never in a URL, since it may hold a candidate's id. */
export const orderingKeyRequest = z.strictObject({
  key: z
    .string()
    .min(1, { message: `must be 1 to ${MAX_ORDERING_KEY_LENGTH} characters` })
    .max(MAX_ORDERING_KEY_LENGTH, { message: `must be 1 to ${MAX_ORDERING_KEY_LENGTH} characters` }),
});

export interface OrderingDecision {
  readonly key: string;
  readonly webhook_id: string;
  readonly decision: BlockedDecision;
}

/**
 * Skips (the head ends as failed, a gap, and the key goes on) or retries (one more attempt now) a key's blocked
 * head. Audited with the head's webhook id as its target (none for a key with no lane), never the key nor a
 * digest of it: no parameter holds it, and no refusal's text quotes it. 404 for a key with no lane, 409 for one
 * whose head is not blocked.
 */
export async function decideBlockedKey(
  knex: Knex,
  atRest: DataAtRest,
  gateway: TemporalGateway,
  who: OperatorContext,
  body: unknown,
  decision: BlockedDecision,
): Promise<OrderingDecision> {
  const parsed = orderingKeyRequest.safeParse(body);
  if (!parsed.success) throw new InvalidRequestError(zodPathErrors(parsed.error));
  const { key } = parsed.data;
  const lane = await headOfKey(knex, atRest, key);
  const head = lane?.head;
  // Refused like any other change: a 404 or a 409 is recorded as failed.
  return auditedCall(
    knex,
    who,
    { action: decision === 'skip' ? 'ordering.skip' : 'ordering.retry', target: head?.webhookId ?? null },
    async () => {
      if (!lane) throw new UnknownOrderingKeyError();
      // A head whose run ended without settling (stopped in Temporal, a rejected claim, a workflow error) is skipped
      // too.
      if (decision === 'skip' && head && !head.blocked && (await settleEndedHead({ knex, gateway }, head)).settled)
        return { key, webhook_id: head.webhookId, decision };
      if (!head?.blocked)
        throw new WebhookConflictError(
          head
            ? `The key is not blocked: its head, webhook ${head.webhookId}, has not failed finally.`
            : 'The key is not blocked: every webhook of it has settled.',
        );
      await gateway.actingFor(who.actor).decideBlocked(head.workflowId, decision);
      return { key, webhook_id: head.webhookId, decision };
    },
  );
}
