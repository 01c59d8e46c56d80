import type { Knex } from 'knex';
import { attachRun, loadWebhookView, storeOutcome, type WebhookView } from '../store/webhook-store';
import type { WebhookStarter } from './temporal-starter';

/** The status URL's answer: the row with its attempts, and the live state while the workflow runs. */
export type WebhookStatusView = Omit<WebhookView, 'status'> & {
  /** The row's status, or `not_started` while no workflow run is known for it (its start failed or is in doubt). */
  readonly status: WebhookView['status'] | 'not_started';
  readonly delivery: { readonly state: string; readonly next_attempt_at: string | null } | null;
};

/**
 * Reads one webhook. While its row is pending, Temporal knows what the database cannot: that a start whose
 * outcome was unknown did happen (the run is recorded now), the live state, or that an operator stopped the
 * run, which no workflow code could record (recorded now, with the close time).
 */
export async function webhookStatus(knex: Knex, starter: WebhookStarter, webhookId: string): Promise<WebhookStatusView | undefined> {
  const view = await loadWebhookView(knex, webhookId);
  if (!view || view.status !== 'pending' || !view.workflow_id) return view && { ...view, delivery: null };
  const lookup = await starter.status(view.workflow_id);
  const found = lookup && lookup.kind !== 'absent' ? lookup : undefined;
  let changed = false;
  if (found && !view.run_id) changed = await attachRun(knex, webhookId, found.runId);
  if (found?.kind === 'stopped') {
    const webhook = { webhookId, eventId: view.event_id, workflowId: view.workflow_id, runId: found.runId, isTest: view.is_test };
    await storeOutcome(knex, { webhook, status: found.status, finishedAt: found.closedAt });
    changed = true;
  }
  const current = changed ? (await loadWebhookView(knex, webhookId))! : view;
  const live = found?.kind === 'running' ? found.status : undefined;
  return {
    ...current,
    status: current.run_id ? current.status : 'not_started',
    delivery: live ? { state: live.state, next_attempt_at: live.nextAttemptAt } : null,
  };
}
