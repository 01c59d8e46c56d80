import type Router from '@koa/router';
import { createRouter } from '../router';
import type { Context } from 'koa';
import { dataAtRest } from '../../lib/at-rest';
import { isCanonicalUuid } from '../../lib/validation';
import { requestOrigin } from '../request-origin';
import type { ApiDependencies } from '../context';
import { acceptWebhook } from '../../application/ingestion/ingest';
import { prepareWebhook } from '../../application/ingestion/start-webhook';
import { statusWithoutPayload, webhookStatus } from '../../application/webhooks/webhook-status';
import { parseBulkRedelivery, parseRedeliveryQuery } from '../../application/webhooks/webhook-filter';
import { readDeliveryLog } from '../../application/webhooks/delivery-log';
import {
  cancelWebhook,
  redeliverMatching,
  redeliverWebhook,
  retryWebhookNow,
} from '../../application/webhooks/webhook-operations';
import { previewRedelivery } from '../../application/webhooks/redelivery-preview';
import { operatorOf, requireScope } from './bearer-auth';
import { answerInternalErrors, countIngestRefusals } from './errors';
import { startAdmission } from '../../application/ingestion/start-admission';
import { jsonBody } from './json-body';
import { nextPageLink } from './next-page-link';
import { InternalApiError } from '../../lib/errors';

/**
 * The internal webhook API: start a webhook, its status URL, the delivery log, and an operator's retry-now,
 * cancel and redeliver. Every route needs a token with its scope (docs/access.md, "Tokens and scopes").
 * Every failure is thrown and answered by `answerInternalErrors`.
 */
export function internalWebhooksRouter({
  config,
  knex,
  temporalGateway: gateway,
  tokenChecker: tokens,
}: ApiDependencies): Router {
  const router = createRouter({ prefix: '/internal/v1/webhooks', sensitive: true });
  // startApiServer makes both when its caller passes none, and closes them with the server.
  if (!gateway || !tokens) throw new Error('the internal webhook API needs a Temporal gateway and a token checker');
  router.use(answerInternalErrors);
  // Absolute when the Host header is a valid host name, else a path: never an echo of an arbitrary header.
  const origin = (ctx: Context) => requestOrigin(ctx) ?? '';
  const statusUrl = (ctx: Context, webhookId: string) => `${origin(ctx)}/internal/v1/webhooks/${webhookId}`;
  /** The webhook id in the path; anything but a canonical UUID names no webhook. */
  const webhookIdFrom = (value: string | undefined) => {
    if (value === undefined || !isCanonicalUuid(value)) throw new InternalApiError(404, { detail: 'Not found.' });
    return value;
  };
  const webhookIdOf = (ctx: { params: Record<string, string> }) => webhookIdFrom(ctx.params.webhook_id);
  const atRest = dataAtRest(config);

  // This process's bound of starts in flight: past it, 503 `overloaded` before anything is stored.
  const admission = startAdmission(config.INGEST_MAX_STARTS_IN_FLIGHT);
  router.post(
    '/',
    requireScope(tokens, 'ingest'),
    jsonBody,
    countIngestRefusals,
    async function startWebhookRoute(ctx) {
      const webhook = prepareWebhook(ctx.request.body, config.PARTNER_TIMEOUT_MS, config.WEBHOOK_ORDERING);
      const accepted = await admission.admit(() => acceptWebhook(knex, atRest, gateway, webhook));
      ctx.status = accepted.started ? 202 : 200;
      ctx.set('Location', statusUrl(ctx, accepted.webhookId));
      ctx.body = {
        webhook_id: accepted.webhookId,
        event_id: accepted.eventId,
        workflow_id: accepted.workflowId,
        run_id: accepted.runId,
        status_url: statusUrl(ctx, accepted.webhookId),
      };
    },
  );

  router.get('/', requireScope(tokens, 'read'), async function webhookLogRoute(ctx) {
    const page = await readDeliveryLog(knex, ctx.query);
    ctx.body = {
      next: nextPageLink(ctx, page.nextCursor),
      results: page.webhooks.map((row) => ({ ...row, status_url: statusUrl(ctx, row.webhook_id) })),
    };
  });

  router.post('/redeliver', requireScope(tokens, 'operate'), jsonBody, async function bulkRedeliverRoute(ctx) {
    const { filter, limit, allowExpiredLinks, dryRun } = parseBulkRedelivery(ctx.request.body);
    ctx.body = dryRun
      ? await previewRedelivery(knex, operatorOf(ctx), filter, { atRest, limit, allowExpiredLinks })
      : await redeliverMatching(knex, gateway, operatorOf(ctx), filter, {
          sendTimeoutMs: config.PARTNER_TIMEOUT_MS,
          atRest,
          limit,
          allowExpiredLinks,
        });
  });

  // A RegExp path (it takes no prefix) that leaves out `redeliver`, so that /redeliver, which is POST only, does
  // not also match this GET: its OPTIONS would list GET in Allow, and a GET of it would answer 404, not 405.
  router.get(
    WEBHOOK_STATUS_ROUTE,
    WEBHOOK_STATUS_PATH,
    requireScope(tokens, 'ingest', 'read'),
    async function webhookStatusRoute(ctx) {
      const view = await webhookStatus(knex, atRest, gateway, webhookIdFrom(ctx.captures?.[0]));
      if (!view) throw new InternalApiError(404, { detail: 'Not found.' });
      // `ingest` alone sees how the delivery goes, not the candidate's data it carries (docs/webhooks.md).
      ctx.body = ctx.state.scopes.includes('read') ? view : statusWithoutPayload(view);
    },
  );

  router.post('/:webhook_id/retry-now', requireScope(tokens, 'operate'), async function retryNowRoute(ctx) {
    const webhookId = webhookIdOf(ctx);
    const { attempt } = await retryWebhookNow(knex, gateway, operatorOf(ctx), webhookId);
    ctx.status = 202;
    ctx.body = { webhook_id: webhookId, attempt, status_url: statusUrl(ctx, webhookId) };
  });

  router.post('/:webhook_id/cancel', requireScope(tokens, 'operate'), async function cancelRoute(ctx) {
    const webhookId = webhookIdOf(ctx);
    await cancelWebhook(knex, gateway, operatorOf(ctx), webhookId);
    ctx.status = 202;
    ctx.body = { webhook_id: webhookId, status_url: statusUrl(ctx, webhookId) };
  });

  router.post('/:webhook_id/redeliver', requireScope(tokens, 'operate'), async function redeliverRoute(ctx) {
    const webhookId = webhookIdOf(ctx);
    const { allowExpiredLinks } = parseRedeliveryQuery(ctx.query);
    const redelivery = await redeliverWebhook(knex, gateway, operatorOf(ctx), webhookId, {
      sendTimeoutMs: config.PARTNER_TIMEOUT_MS,
      atRest,
      allowExpiredLinks,
    });
    ctx.status = 202;
    ctx.set('Location', statusUrl(ctx, redelivery.webhookId));
    ctx.body = {
      webhook_id: redelivery.webhookId,
      redelivery_of: redelivery.redeliveryOf,
      workflow_id: redelivery.workflowId,
      run_id: redelivery.runId,
      status_url: statusUrl(ctx, redelivery.webhookId),
    };
  });

  return router;
}

/** The status route's name: its pattern in metrics and logs (its path is a RegExp). */
const WEBHOOK_STATUS_ROUTE = '/internal/v1/webhooks/:webhook_id';
const WEBHOOK_STATUS_PATH = /^\/internal\/v1\/webhooks\/(?!redeliver\/?$)([^/]+)\/?$/;
