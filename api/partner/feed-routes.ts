import { feedItemJson, getConsumer, putConsumer, readFeedPage } from '../../application/webhooks/partner-feed';
import { dataAtRest } from '../../lib/at-rest';
import { InternalApiError } from '../../lib/errors';
import { jsonBodyUpTo } from '../internal/json-body';
import { requestOrigin } from '../request-origin';
import { requireAppScope } from './app-auth';
import { createFeedNotifier } from './feed-notifier';
import type { PartnerRoutes } from './routes';

/**
 * The pull feed and its consumers (`deliveries:read`): every webhook of the app's companies once, in order, with a
 * long poll; a consumer's stored position. Reading never changes a delivery, paused or not, with or without an
 * endpoint configured.
 */
export const feedRoutes: PartnerRoutes = (router, { knex, config, logger, feedNotifier }) => {
  const atRest = dataAtRest(config);
  const wakeups = feedNotifier ?? createFeedNotifier(knex, logger);
  const read = requireAppScope('deliveries:read');

  router.get('/events', read, async function readPartnerFeedRoute(ctx) {
    const page = await readFeedPage(knex, atRest, ctx.state.app.companyIds, ctx.query, {
      logRetentionDays: config.WEBHOOK_LOG_RETENTION_DAYS,
      wakeups,
    });
    const next = new URLSearchParams(ctx.querystring);
    next.delete('wait');
    if (page.nextCursor) next.set('after', page.nextCursor);
    const items = page.items.map((row) => feedItemJson(row, page.cursorOf(row)));
    ctx.type = 'application/json';
    ctx.body =
      `{"next_cursor":${JSON.stringify(page.nextCursor)},` +
      `"next":${JSON.stringify(`${requestOrigin(ctx) ?? ''}/partner/v1/events?${next.toString()}`)},` +
      `"results":[${items.join(',')}]}`;
  });

  router.put('/consumers/:name', read, jsonBodyUpTo('16kb'), async function putPartnerConsumerRoute(ctx) {
    ctx.body = await putConsumer(knex, ctx.state.app.appId, ctx.params.name, ctx.request.body);
  });

  router.get('/consumers/:name', read, async function getPartnerConsumerRoute(ctx) {
    const consumer = await getConsumer(knex, ctx.state.app.appId, ctx.params.name);
    if (!consumer) throw new InternalApiError(404, { detail: 'Not found.' });
    ctx.body = consumer;
  });
};
