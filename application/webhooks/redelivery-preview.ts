import type { Knex } from 'knex';
import { auditedChange, type OperatorContext } from '../access/audit';
import { signedLinkDeadlines } from '../../events/signed-links';
import type { WebhookFilter } from '../../store/webhooks/delivery-log';
import { countRedelivery, findSealedOriginals } from '../../store/webhooks/redelivery-preview';
import { asStoredWebhook } from '../../store/webhooks/webhook-rows';
import { storedEvent } from '../ingestion/start-webhook';
import { bulkRedeliveryKey, bulkRedeliveryParameters, type BulkRedeliveryOptions } from './webhook-operations';

// A bulk redelivery's dry run: what the same request would start and skip, counted in PostgreSQL without a
// start, a row or a call to Temporal. It is audited as the redelivery is, with `dry_run: true`.

/** The dry run's answer: the redelivery's, with `would_start` for `started`. */
export interface BulkRedeliveryPreview {
  readonly dry_run: true;
  readonly would_start: number;
  readonly skipped_expired_links: number;
  readonly skipped_payload_removed: number;
  readonly more: boolean;
}

export type PreviewOptions = Pick<BulkRedeliveryOptions, 'limit' | 'atRest' | 'allowExpiredLinks' | 'now'>;

/** What redeliverMatching would do with the same filter and options, now; one audit row (it changes nothing). */
export function previewRedelivery(knex: Knex, who: OperatorContext, filter: WebhookFilter, options: PreviewOptions): Promise<BulkRedeliveryPreview> {
  const what = { action: 'webhooks.redeliver', target: null, parameters: { ...bulkRedeliveryParameters(filter, options), dry_run: true } } as const;
  return auditedChange(knex, who, what, async (trx) => ({ dry_run: true, ...(await countInSql(trx, filter, options)) }));
}

async function countInSql(knex: Knex, filter: WebhookFilter, { limit, atRest, allowExpiredLinks = false, now = () => new Date() }: PreviewOptions) {
  const key = bulkRedeliveryKey(filter);
  if (allowExpiredLinks) return countRedelivery(knex, { filter, key, limit, at: null, sealedExpired: [] });
  const at = now();
  // Sealed bodies open only here, as the redelivery's checkSignedLinks opens them; a deployment in clear has none.
  const sealed = atRest.keys.length ? await findSealedOriginals(knex, filter, key, at.toISOString()) : [];
  const sealedExpired = sealed
    .map((row) => asStoredWebhook(row, atRest))
    .filter((original) => signedLinkDeadlines(storedEvent(original), original.acceptedAt).some(({ expiresAt }) => at > expiresAt))
    .map((original) => original.webhookId);
  return countRedelivery(knex, { filter, key, limit, at: at.toISOString(), sealedExpired });
}
