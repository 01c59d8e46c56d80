import {
  countOverdueErasuresWith,
  countQueuedWebhooksWith,
  countStartsInDoubtWith,
  countWaitingWebhooksWith,
  observeOldestBodyWith,
  observeOldestBlockedWith,
  observeOldestQueuedWith,
  observePartnerWith,
  oneReadPerScrape,
} from '../lib/metrics';
import { orderingBacklog } from '../store/ordering/lanes';
import { countWaitingDeliveries } from '../application/webhooks/delivery-log';
import { partnerSnapshot } from '../application/partner/partner-operator';
import { countStartsInDoubt } from '../store/ingestion/starts-in-doubt';
import { countOverdueErasures } from '../store/personal-data/erasures';
import { oldestStoredBody } from '../store/personal-data/retention-purge';
import type { WorkerDependencies } from './worker-options';

/** The worker's gauges, each read from PostgreSQL at scrape time: the api process does not export them. */
export function observeWorkerGauges({ config, knex }: WorkerDependencies): void {
  countWaitingWebhooksWith(() => countWaitingDeliveries(knex));
  observePartnerWith(() => partnerSnapshot(knex, config));
  observeOldestBodyWith(() => oldestStoredBody(knex), config.WEBHOOK_PAYLOAD_RETENTION_DAYS);
  countStartsInDoubtWith(() => countStartsInDoubt(knex, config.WEBHOOK_START_DOUBT_SECONDS));
  countOverdueErasuresWith(() => countOverdueErasures(knex));
  const backlog = oneReadPerScrape(() => orderingBacklog(knex));
  countQueuedWebhooksWith(async () => (await backlog()).queued);
  observeOldestQueuedWith(async () => (await backlog()).oldestQueuedSeconds);
  observeOldestBlockedWith(async () => (await backlog()).oldestBlockedSeconds);
}
