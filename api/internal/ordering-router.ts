import type Router from '@koa/router';
import { createRouter } from '../router';
import type { ApiDependencies } from '../context';
import { dataAtRest } from '../../lib/at-rest';
import { orderingStatus } from '../../application/ordering/ordering-status';
import { decideBlockedKey } from '../../application/ordering/ordering-operator';
import { operatorOf, requireScope } from './bearer-auth';
import { jsonBody } from './json-body';
import { answerInternalErrors } from './errors';

/**
 * Per-entity ordering as an operator sees it: each key with an unsettled webhook (scope `read`); a blocked key's
 * skip (200) and retry (202, the attempt is made) (scope `operate`, audited).
 */
export function internalOrderingRouter({
  config,
  knex,
  temporalGateway: gateway,
  tokenChecker: tokens,
}: ApiDependencies): Router {
  const router = createRouter({ prefix: '/internal/v1/ordering', sensitive: true });
  if (!gateway || !tokens) throw new Error('the internal ordering API needs a Temporal gateway and a token checker');
  router.use(answerInternalErrors);
  const atRest = dataAtRest(config);
  router.get('/', requireScope(tokens, 'read'), async function orderingStatusRoute(ctx) {
    ctx.body = await orderingStatus(knex, atRest, ctx.query);
  });
  router.post('/skip', requireScope(tokens, 'operate'), jsonBody, async function skipOrderingKeyRoute(ctx) {
    ctx.body = await decideBlockedKey(knex, atRest, gateway, operatorOf(ctx), ctx.request.body, 'skip');
  });
  router.post('/retry', requireScope(tokens, 'operate'), jsonBody, async function retryOrderingKeyRoute(ctx) {
    ctx.status = 202;
    ctx.body = await decideBlockedKey(knex, atRest, gateway, operatorOf(ctx), ctx.request.body, 'retry');
  });
  return router;
}
