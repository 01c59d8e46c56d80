import type Router from '@koa/router';
import type { Context } from 'koa';
import { createRouter } from '../router';
import { isCanonicalUuid } from '../../lib/validation';
import { requestOrigin } from '../request-origin';
import type { ApiDependencies } from '../context';
import { erasureStatus, requestErasure } from '../../application/personal-data/erasure';
import { operatorOf, requireScope } from './bearer-auth';
import { answerInternalErrors } from './errors';
import { jsonBody } from './json-body';
import { InternalApiError } from '../../lib/errors';

/**
 * Erasure on request (docs/personal-data.md): POST records the request and starts its workflow, GET shows its
 * progress. Both need a token with the scope `erase`.
 */
export function internalErasuresRouter({
  config,
  knex,
  temporalGateway: gateway,
  tokenChecker: tokens,
}: ApiDependencies): Router {
  const router = createRouter({ prefix: '/internal/v1/erasures', sensitive: true });
  if (!gateway || !tokens) throw new Error('the internal erasure API needs a Temporal gateway and a token checker');
  router.use(answerInternalErrors, requireScope(tokens, 'erase'));
  const statusUrl = (ctx: Context, erasureId: string) =>
    `${requestOrigin(ctx) ?? ''}/internal/v1/erasures/${erasureId}`;

  router.post('/', jsonBody, async function requestErasureRoute(ctx) {
    const { erasureId } = await requestErasure(knex, gateway, config, operatorOf(ctx), ctx.request.body);
    ctx.status = 202;
    ctx.set('Location', statusUrl(ctx, erasureId));
    ctx.body = { erasure_id: erasureId, status: 'pending', status_url: statusUrl(ctx, erasureId) };
  });

  router.get('/:erasure_id', async function erasureStatusRoute(ctx) {
    const erasureId = ctx.params.erasure_id;
    // Anything but a canonical UUID names no erasure.
    if (!isCanonicalUuid(erasureId)) throw new InternalApiError(404, { detail: 'Not found.' });
    ctx.body = { ...(await erasureStatus(knex, erasureId)), status_url: statusUrl(ctx, erasureId) };
  });
  return router;
}
