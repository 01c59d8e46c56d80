import { catalogExamples, sendTestEvent } from '../../application/ingestion/test-event';
import { dataAtRest } from '../../lib/at-rest';
import { requestOrigin } from '../request-origin';
import { jsonBody } from '../internal/json-body';
import { actingApp, requireAppScope } from './app-auth';
import type { PartnerRoutes } from './routes';

/**
 * The event catalog (`deliveries:read`) and test events (`deliveries:write`): the catalog's example of a pair, sent
 * through the normal delivery path.
 */
export const testEventRoutes: PartnerRoutes = (router, { knex, config, temporalGateway }) => {
  const atRest = dataAtRest(config);
  router.get('/event-types', requireAppScope('deliveries:read'), function listPartnerEventTypesRoute(ctx) {
    ctx.body = { event_types: catalogExamples() };
  });
  router.post(
    '/test-events',
    requireAppScope('deliveries:write'),
    jsonBody,
    async function sendPartnerTestEventRoute(ctx) {
      const app = ctx.state.app;
      const accepted = await sendTestEvent(
        knex,
        atRest,
        temporalGateway,
        config,
        actingApp(ctx),
        app,
        ctx.request.body,
      );
      // Absolute when the Host header is a valid host name, else a path, as the internal API's status URL.
      const statusUrl = `${requestOrigin(ctx) ?? ''}/partner/v1/webhooks/${accepted.webhookId}`;
      ctx.status = 202;
      ctx.set('Location', statusUrl);
      ctx.body = { webhook_id: accepted.webhookId, event_id: accepted.eventId, status_url: statusUrl };
    },
  );
};
