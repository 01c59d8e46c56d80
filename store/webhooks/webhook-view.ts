import type { Knex } from 'knex';
import { runSql, sql } from '../../db/sql';
import type { DataAtRest } from '../../lib/at-rest';
import {
  asStoredWebhook,
  ATTEMPT_COLUMNS,
  openAttempt,
  openWebhookView,
  STORED_WEBHOOK_COLUMNS,
  WEBHOOK_VIEW_COLUMNS,
  type AttemptRow,
  type AttemptView,
  type StoredWebhook,
  type StoredWebhookRow,
  type WebhookViewFields,
  type WebhookViewRow,
} from './webhook-rows';

// One webhook as it is read back: the status URL's view (with the run it learns from Temporal), and the stored
// webhook an operation on it starts from.

/** One webhook as the status URL shows it: its row and every recorded attempt, in snake_case JSON. */
export async function loadWebhookView(
  knex: Knex,
  atRest: DataAtRest,
  webhookId: string,
): Promise<WebhookView | undefined> {
  const [row] = await runSql<WebhookViewRow>(
    knex,
    sql`SELECT ${WEBHOOK_VIEW_COLUMNS} FROM webhook_events WHERE id = ${webhookId}`,
  );
  if (!row) return undefined;
  const attempts = await runSql<AttemptRow>(
    knex,
    sql`SELECT ${ATTEMPT_COLUMNS} FROM webhook_attempts WHERE webhook_id = ${webhookId} ORDER BY attempt`,
  );
  return {
    ...openWebhookView(atRest, row),
    attempts: attempts.map((attempt) => openAttempt(atRest, webhookId, attempt)),
  };
}

export type WebhookView = WebhookViewFields & { readonly attempts: AttemptView[] };

export async function findWebhookById(
  knex: Knex,
  atRest: DataAtRest,
  webhookId: string,
): Promise<StoredWebhook | undefined> {
  const [row] = await runSql<StoredWebhookRow>(
    knex,
    sql`SELECT ${STORED_WEBHOOK_COLUMNS} FROM webhook_events WHERE id = ${webhookId}`,
  );
  return row && asStoredWebhook(row, atRest);
}

/** Whether a webhook belongs to one of `companyIds` (a partner app's grant): false for an unknown id. */
export async function isWebhookOfCompanies(
  knex: Knex,
  webhookId: string,
  companyIds: readonly string[],
): Promise<boolean> {
  const rows = await runSql<{ id: string }>(
    knex,
    sql`SELECT id FROM webhook_events WHERE id = ${webhookId}::uuid AND company_id = ANY(${companyIds}::text[])`,
  );
  return rows.length === 1;
}
