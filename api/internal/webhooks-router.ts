import Router from '@koa/router';
import type { Context } from 'koa';
import { isCanonicalUuid } from '../../lib/validation';
import { requestOrigin } from '../request-origin';
import type { ApiDependencies } from '../context';
import { acceptWebhook } from '../../webhooks/ingest';
import { prepareWebhook, WebhookValidationError } from '../../webhooks/start-webhook';
import { createTemporalStarter, TemporalUnavailableError } from '../../webhooks/temporal-starter';
import { loadWebhookView } from '../../webhooks/webhook-view';
import { storeOutcome } from '../../activities/attempt-store';
import { TemporalSetupError } from '../../temporal/register-search-attributes';
import { requireBearerToken } from './bearer-auth';
import { jsonBody } from './json-body';


/**
 * POST /internal/v1/webhooks starts a webhook; GET /internal/v1/webhooks/:webhook_id is its status URL.
 * Both need `Authorization: Bearer <INTERNAL_API_TOKEN>`; without that token configured the routes do not exist.
 */
export function internalWebhooksRouter({ config, knex, logger, webhookStarter }: ApiDependencies): Router {
  const router = new Router({ prefix: '/internal/v1/webhooks', sensitive: true });
  if (!config.INTERNAL_API_TOKEN) return router;
  // Connects lazily, so the API serves while Temporal is down. Normally the CLI passes one in and closes it.
  const starter = webhookStarter ?? createTemporalStarter(config, logger);
  const auth = requireBearerToken(config.INTERNAL_API_TOKEN);
  // Absolute when the Host header is a valid host name, else a path: never an echo of an arbitrary header.
  const statusUrl = (ctx: Context, webhookId: string) => `${requestOrigin(ctx) ?? ''}/internal/v1/webhooks/${webhookId}`;

  router.post('/', auth, jsonBody, async (ctx) => {
    let prepared;
    try {
      prepared = prepareWebhook(ctx.request.body, config.PARTNER_TIMEOUT_MS);
    } catch (error) {
      if (!(error instanceof WebhookValidationError)) throw error;
      ctx.status = 400;
      ctx.body = { detail: 'Invalid webhook event.', errors: error.errors };
      return;
    }
    try {
      const accepted = await acceptWebhook(knex, starter, prepared);
      ctx.status = accepted.created ? 202 : 200;
      ctx.set('Location', statusUrl(ctx, accepted.webhookId));
      ctx.body = {
        webhook_id: accepted.webhookId,
        event_id: accepted.eventId,
        workflow_id: accepted.workflowId,
        run_id: accepted.runId,
        status_url: statusUrl(ctx, accepted.webhookId),
      };
    } catch (error) {
      if (error instanceof TemporalSetupError) {
        // Not an outage: retrying cannot help until an operator mends Temporal's configuration.
        ctx.status = 500;
        ctx.body = { detail: 'The webhook was not accepted because Temporal refused the service\'s configuration. An operator must fix it; retrying will not help.', reason: error.message };
        return;
      }
      if (!(error instanceof TemporalUnavailableError)) throw error;
      ctx.status = 503;
      ctx.set('Retry-After', '30');
      ctx.body = {
        detail: 'The webhook was not accepted because Temporal is unavailable. Retry later with the same event_id.',
        reason: error.reason,
      };
    }
  });

  router.get('/:webhook_id', auth, async (ctx) => {
    const webhookId = ctx.params.webhook_id;
    let view = isCanonicalUuid(webhookId) ? await loadWebhookView(knex, webhookId) : undefined;
    if (!view) {
      ctx.status = 404;
      ctx.body = { detail: 'Not found.' };
      return;
    }
    // While pending, Temporal knows what the database cannot: the live state, or that an operator stopped the run.
    const lookup = view.status === 'pending' && view.workflow_id ? await starter.status(view.workflow_id) : undefined;
    if (lookup?.kind === 'stopped') {
      const webhook = { webhookId: view.webhook_id, eventId: view.event_id, workflowId: view.workflow_id, runId: view.run_id, isTest: view.is_test };
      await storeOutcome(knex, { webhook, status: lookup.status, finishedAt: lookup.closedAt });
      view = (await loadWebhookView(knex, webhookId))!;
    }
    const live = lookup?.kind === 'running' ? lookup.status : undefined;
    ctx.body = {
      ...view,
      delivery: live ? { state: live.state, next_attempt_at: live.nextAttemptAt } : null,
    };
  });

  return router;
}
