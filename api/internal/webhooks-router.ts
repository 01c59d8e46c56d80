import Router from '@koa/router';
import type { Context } from 'koa';
import { isCanonicalUuid } from '../../lib/validation';
import { requestOrigin } from '../request-origin';
import type { ApiDependencies } from '../context';
import { acceptWebhook } from '../../client/ingest';
import { prepareWebhook } from '../../client/start-webhook';
import { createTemporalStarter } from '../../client/temporal-starter';
import { webhookStatus } from '../../client/webhook-status';
import { requireBearerToken } from './bearer-auth';
import { answerInternalErrors, InternalApiError } from './errors';
import { jsonBody } from './json-body';

/**
 * POST /internal/v1/webhooks starts a webhook; GET /internal/v1/webhooks/:webhook_id is its status URL.
 * Both need `Authorization: Bearer <INTERNAL_API_TOKEN>`; without that token configured the routes do not exist.
 * Every failure is thrown and answered by `answerInternalErrors` in one body shape.
 */
export function internalWebhooksRouter({ config, knex, logger, webhookStarter }: ApiDependencies): Router {
  const router = new Router({ prefix: '/internal/v1/webhooks', sensitive: true });
  if (!config.INTERNAL_API_TOKEN) return router;
  // Connects lazily, so the API serves while Temporal is down. Normally the CLI passes one in and closes it.
  const starter = webhookStarter ?? createTemporalStarter(config, logger);
  router.use(answerInternalErrors, requireBearerToken(config.INTERNAL_API_TOKEN));
  // Absolute when the Host header is a valid host name, else a path: never an echo of an arbitrary header.
  const statusUrl = (ctx: Context, webhookId: string) => `${requestOrigin(ctx) ?? ''}/internal/v1/webhooks/${webhookId}`;

  router.post('/', jsonBody, async function startWebhookRoute(ctx) {
    const accepted = await acceptWebhook(knex, starter, prepareWebhook(ctx.request.body, config.PARTNER_TIMEOUT_MS));
    ctx.status = accepted.started ? 202 : 200;
    ctx.set('Location', statusUrl(ctx, accepted.webhookId));
    ctx.body = {
      webhook_id: accepted.webhookId,
      event_id: accepted.eventId,
      workflow_id: accepted.workflowId,
      run_id: accepted.runId,
      status_url: statusUrl(ctx, accepted.webhookId),
    };
  });

  router.get('/:webhook_id', async function webhookStatusRoute(ctx) {
    const webhookId = ctx.params.webhook_id;
    const view = isCanonicalUuid(webhookId) ? await webhookStatus(knex, starter, webhookId) : undefined;
    if (!view) throw new InternalApiError(404, { detail: 'Not found.' });
    ctx.body = view;
  });

  return router;
}
