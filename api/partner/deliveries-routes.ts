import { dataAtRest } from '../../lib/at-rest';
import { readPartnerDeliveries } from '../../application/webhooks/partner-deliveries';
import { nextPageLink } from '../internal/next-page-link';
import { requireAppScope } from './app-auth';
import type { PartnerRoutes } from './routes';

/** The partner's deliveries (`deliveries:read`): its companies' webhooks, one webhook and why, its body. */
export const deliveryRoutes: PartnerRoutes = (router, { knex, config }) => {
  const atRest = dataAtRest(config);

  router.get('/webhooks', requireAppScope('deliveries:read'), async function listPartnerWebhooksRoute(ctx) {
    const page = await readPartnerDeliveries(knex, atRest, ctx.state.app.companyIds, ctx.query);
    ctx.body = {
      next: nextPageLink(ctx, page.nextCursor),
      previous: nextPageLink(ctx, page.previousCursor),
      results: page.webhooks,
    };
  });
};
