import type Router from '@koa/router';
import { createRouter } from '../router';
import type { ApiDependencies } from '../context';
import { dataAtRest } from '../../lib/at-rest';
import { orderingStatus } from '../../application/ordering/ordering-status';
import { requireScope } from './bearer-auth';
import { answerInternalErrors } from './errors';

/** Per-entity ordering as an operator sees it: each key with an unsettled webhook (scope `read`). */
export function internalOrderingRouter({ config, knex, tokenChecker: tokens }: ApiDependencies): Router {
  const router = createRouter({ prefix: '/internal/v1/ordering', sensitive: true });
  if (!tokens) throw new Error('the internal ordering API needs a token checker');
  router.use(answerInternalErrors);
  const atRest = dataAtRest(config);
  router.get('/', requireScope(tokens, 'read'), async function orderingStatusRoute(ctx) {
    ctx.body = await orderingStatus(knex, atRest, ctx.query);
  });
  return router;
}
