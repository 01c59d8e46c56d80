import type { Knex } from 'knex';
import type { DataAtRest } from '../../lib/at-rest';
import { storeOutcome } from '../../store/webhooks/attempt-record';
import { loadWebhookView, type WebhookView } from '../../store/webhooks/webhook-view';
import type { AttemptView } from '../../store/webhooks/webhook-rows';
import type { TemporalGateway } from '../../temporal/gateway';
import { signedLinkDeadlines } from '../../events/signed-links';
import type { SignedLinkKind } from '../../lib/vocabulary';
import { recordRun } from '../../store/ingestion/webhook-ingestion';

/** Where a pending delivery stands right now: the workflow's own answer, or why only the database answered. */
export type LiveState =
  | { readonly source: 'temporal'; readonly state: string; readonly next_attempt_at: string | null }
  | { readonly source: 'database'; readonly reason: string };

/** The status URL's answer: the row with its event and attempts, and the live state while the row is pending. */
export type WebhookStatusView = Omit<WebhookView, 'status'> & {
  /** The row's status, or `not_started` while no workflow run is known for it (its start failed or is in doubt). */
  readonly status: WebhookView['status'] | 'not_started';
  /** Null once the row has its final status: PostgreSQL is then the whole truth. */
  readonly live: LiveState | null;
  /** Each kind of signed link the event carries, when it is certainly dead, and whether it is now. */
  readonly signed_links: SignedLinkState[];
};

export interface SignedLinkState {
  readonly kind: SignedLinkKind;
  readonly expires_at: Date;
  readonly expired: boolean;
}

const signedLinks = (view: WebhookView, now: Date): SignedLinkState[] =>
  view.event === null
    ? []
    : signedLinkDeadlines(view.event, view.accepted_at).map(({ kind, expiresAt }) => ({
        kind,
        expires_at: expiresAt,
        expired: now > expiresAt,
      }));

/**
 * Reads one webhook. While its row is pending, Temporal knows what the database cannot: that a start whose
 * outcome was unknown did happen (the run is recorded now), the live state, or that an operator stopped the
 * run, which no workflow code could record (recorded now, with the close time). When Temporal does not answer,
 * the database view comes back and says so.
 */
export async function webhookStatus(
  knex: Knex,
  atRest: DataAtRest,
  gateway: TemporalGateway,
  webhookId: string,
  now = new Date(),
): Promise<WebhookStatusView | undefined> {
  const view = await loadWebhookView(knex, atRest, webhookId);
  if (!view) return undefined;
  const signed_links = signedLinks(view, now);
  if (view.status !== 'pending' || !view.workflow_id)
    return { ...view, status: notStartedOr(view), live: null, signed_links };
  const lookup = await gateway.status(view.workflow_id);
  if (lookup.kind === 'unreachable') {
    return {
      ...view,
      status: notStartedOr(view),
      live: { source: 'database', reason: `Temporal did not answer: ${lookup.reason}` },
      signed_links,
    };
  }
  if (lookup.kind === 'absent') {
    return {
      ...view,
      status: notStartedOr(view),
      live: { source: 'database', reason: 'Temporal has no run of this webhook' },
      signed_links,
    };
  }
  let changed = false;
  if (!view.run_id) changed = await recordRun(knex, webhookId, lookup.runId);
  if (lookup.kind === 'stopped') {
    const webhook = {
      webhookId,
      eventId: view.event_id,
      workflowId: view.workflow_id,
      runId: lookup.runId,
      isTest: view.is_test,
    };
    await storeOutcome(knex, { webhook, status: lookup.status, finishedAt: lookup.closedAt });
    changed = true;
  }
  const current = changed ? (await loadWebhookView(knex, atRest, webhookId))! : view;
  const live: LiveState | null =
    lookup.kind === 'running'
      ? { source: 'temporal', state: lookup.status.state, next_attempt_at: lookup.status.nextAttemptAt }
      : null;
  return { ...current, status: notStartedOr(current), live, signed_links };
}

const notStartedOr = (view: WebhookView): WebhookStatusView['status'] => (view.run_id ? view.status : 'not_started');

/** The status without the body and the partner's answers: what a token with `ingest` but not `read` sees. */
export type WebhookStatusSummary = Omit<WebhookStatusView, 'event' | 'attempts'> & {
  readonly attempts: Array<Omit<AttemptView, 'response_body'>>;
};

/**
 * Leaves out `event` and every attempt's `response_body` (absent, not null: null says they were removed). They hold
 * a candidate's data, which an upstream system that only starts webhooks has no need to read back.
 */
export function statusWithoutPayload({ event: _event, attempts, ...status }: WebhookStatusView): WebhookStatusSummary {
  return { ...status, attempts: attempts.map(({ response_body: _excerpt, ...attempt }) => attempt) };
}
