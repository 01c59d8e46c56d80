import type { Context } from 'koa';
import { dataAtRest } from '../../lib/at-rest';
import { requestOrigin } from '../request-origin';
import { jsonBody } from '../internal/json-body';
import { parseRedeliveryQuery } from '../../application/webhooks/webhook-filter';
import {
  cancelRecovery,
  parseRecoveryBody,
  planRecovery,
  recoveryProgress,
  redeliverAppWebhook,
  startRecovery,
  type RecoveryProgress,
  type RecoveryRow,
} from '../../application/webhooks/recoveries';
import { actingApp, requireAppScope } from './app-auth';
import type { PartnerRoutes } from './routes';

// Recovery (scope deliveries:write): one webhook redelivered, and a recovery of a window's failed webhooks with
// its dry run, progress and cancel (docs/partners.md, "Recovering what failed").

const partnerUrl = (ctx: Context, path: string) => `${requestOrigin(ctx) ?? ''}/partner/v1${path}`;

/** A recovery as its routes answer it. */
function recoveryBody(ctx: Context, row: RecoveryRow, outcomes?: RecoveryProgress['outcomes']) {
  const state = row.state === 'running' && row.cancel_requested_at ? 'cancelling' : row.state;
  return {
    recovery_id: row.id,
    state,
    ...row.request,
    total: row.total,
    started: row.started,
    cancelled: row.cancelled,
    skipped: row.skipped,
    ...(outcomes && {
      delivered: outcomes.delivered ?? 0,
      failed: (outcomes.failed ?? 0) + (outcomes.terminated ?? 0),
      cancelled_deliveries: outcomes.cancelled ?? 0,
      pending: outcomes.pending ?? 0,
    }),
    created_at: row.created_at.toISOString(),
    finished_at: row.finished_at?.toISOString() ?? null,
    status_url: partnerUrl(ctx, `/recoveries/${row.id}`),
  };
}

export const recoveryRoutes: PartnerRoutes = (router, { knex, config, temporalGateway: gateway }) => {
  const atRest = dataAtRest(config);
  const write = requireAppScope('deliveries:write');

  router.post('/webhooks/:webhook_id/redeliver', write, async function partnerRedeliverRoute(ctx) {
    const { allowExpiredLinks } = parseRedeliveryQuery(ctx.query);
    const { app } = ctx.state;
    const redelivery = await redeliverAppWebhook(knex, gateway, actingApp(ctx), app, ctx.params.webhook_id, {
      sendTimeoutMs: config.PARTNER_TIMEOUT_MS,
      atRest,
      allowExpiredLinks,
    });
    const statusUrl = partnerUrl(ctx, `/webhooks/${redelivery.webhookId}`);
    ctx.status = 202;
    ctx.set('Location', statusUrl);
    ctx.body = { webhook_id: redelivery.webhookId, redelivery_of: redelivery.redeliveryOf, status_url: statusUrl };
  });

  router.post('/recoveries', write, jsonBody, async function startRecoveryRoute(ctx) {
    const request = parseRecoveryBody(ctx.request.body);
    const { app } = ctx.state;
    if (request.dryRun) {
      const plan = await planRecovery(knex, atRest, app, request);
      ctx.body = {
        dry_run: true,
        since: request.since.toISOString(),
        until: request.until.toISOString(),
        status: request.status,
        ...(request.eventType !== undefined && { event_type: request.eventType }),
        would_start: plan.start.length,
        would_skip: plan.skipped.length,
        webhook_ids: plan.start,
        skipped: plan.skipped.map(({ webhookId, reason }) => ({ webhook_id: webhookId, reason })),
      };
      return;
    }
    const row = await startRecovery(knex, atRest, gateway, actingApp(ctx), app, request);
    const body = recoveryBody(ctx, row);
    ctx.status = 202;
    ctx.set('Location', body.status_url);
    ctx.body = body;
  });

  router.get('/recoveries/:recovery_id', write, async function getRecoveryRoute(ctx) {
    const { row, outcomes } = await recoveryProgress(knex, ctx.state.app, ctx.params.recovery_id);
    ctx.body = recoveryBody(ctx, row, outcomes);
  });

  router.delete('/recoveries/:recovery_id', write, async function cancelRecoveryRoute(ctx) {
    const row = await cancelRecovery(knex, gateway, actingApp(ctx), ctx.state.app, ctx.params.recovery_id);
    ctx.body = recoveryBody(ctx, row);
  });
};
