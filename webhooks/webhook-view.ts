import type { Knex } from 'knex';

/** One webhook as the status URL shows it: its row and every recorded attempt, in snake_case JSON. */
export async function loadWebhookView(knex: Knex, webhookId: string) {
  const row = await knex('webhook_events')
    .select('id', 'event_id', 'event_type', 'action', 'company_id', 'workflow_id', 'run_id', 'status', 'is_test', 'created_at', 'updated_at', 'finished_at')
    .where({ id: webhookId })
    .first();
  if (!row) return undefined;
  const attempts = await knex('webhook_attempts')
    .select('attempt', 'scheduled_at', 'started_at', 'duration_ms', 'http_status', 'error_class', 'error_message', 'response_body', 'succeeded', 'recorded_at')
    .where({ webhook_id: webhookId })
    .orderBy('attempt');
  const { id, ...rest } = row;
  return { webhook_id: id as string, ...rest, attempts };
}
