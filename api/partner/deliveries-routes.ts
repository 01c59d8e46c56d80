import { dataAtRest } from '../../lib/at-rest';
import { InternalApiError } from '../../lib/errors';
import { isCanonicalUuid } from '../../lib/validation';
import { readPartnerDeliveries } from '../../application/webhooks/partner-deliveries';
import { partnerWebhook, partnerWebhookBody } from '../../application/webhooks/partner-webhook';
import { nextPageLink } from '../internal/next-page-link';
import { requireAppScope } from './app-auth';
import type { PartnerRoutes } from './routes';

/** Anything but a canonical UUID, an unknown id and another company's webhook: one answer, so none leaks. */
const NOT_FOUND = () => new InternalApiError(404, { detail: 'Not found.' });

/** The id in the path, when it can name a webhook. */
function webhookIdOf(ctx: { params: Record<string, string> }): string {
  const id = ctx.params.id;
  if (id === undefined || !isCanonicalUuid(id)) throw NOT_FOUND();
  return id;
}

/** The partner's deliveries (`deliveries:read`): its companies' webhooks, one webhook and why, its body. */
export const deliveryRoutes: PartnerRoutes = (router, { knex, config, temporalGateway }) => {
  const atRest = dataAtRest(config);

  router.get('/webhooks', requireAppScope('deliveries:read'), async function listPartnerWebhooksRoute(ctx) {
    const page = await readPartnerDeliveries(knex, atRest, ctx.state.app.companyIds, ctx.query);
    ctx.body = {
      next: nextPageLink(ctx, page.nextCursor),
      previous: nextPageLink(ctx, page.previousCursor),
      results: page.webhooks,
    };
  });

  router.get('/webhooks/:id', requireAppScope('deliveries:read'), async function getPartnerWebhookRoute(ctx) {
    const view = await partnerWebhook(
      knex,
      atRest,
      temporalGateway,
      config,
      ctx.state.app.companyIds,
      webhookIdOf(ctx),
    );
    if (!view) throw NOT_FOUND();
    ctx.body = view;
  });

  router.get('/webhooks/:id/body', requireAppScope('deliveries:read'), async function getPartnerWebhookBodyRoute(ctx) {
    const body = await partnerWebhookBody(knex, atRest, ctx.state.app.companyIds, webhookIdOf(ctx));
    if (!body) throw NOT_FOUND();
    if (body.kind === 'removed') {
      const by = body.reason === 'erasure' ? 'an erasure' : 'retention';
      throw new InternalApiError(410, {
        detail: `The body of this webhook was removed by ${by}${body.at ? ` at ${body.at.toISOString()}` : ''}.`,
        reason: body.reason === 'erasure' ? 'erased' : 'payload_removed',
      });
    }
    ctx.type = 'application/json';
    ctx.body = body.text;
  });
};
