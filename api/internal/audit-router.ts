import type Router from '@koa/router';
import { createRouter } from '../router';
import type { ApiDependencies } from '../context';
import { readAuditTrail } from '../../application/audit-log';
import { requireScope } from './bearer-auth';
import { answerInternalErrors } from './errors';
import { nextPageLink } from './next-page-link';

/**
 * The audit trail (docs/operations.md, "Audit trail: reading it"): every change an operator made, newest
 * first, keyset-paged. Read only: no route changes or deletes a row. Needs a token with the scope `read`.
 */
export function internalAuditRouter({ knex, tokenChecker: tokens }: ApiDependencies): Router {
  const router = createRouter({ prefix: '/internal/v1/audit', sensitive: true });
  if (!tokens) throw new Error('the internal audit API needs a token checker');
  router.use(answerInternalErrors);

  router.get('/', requireScope(tokens, 'read'), async function auditTrailRoute(ctx) {
    const page = await readAuditTrail(knex, ctx.query);
    ctx.body = { next: nextPageLink(ctx, page.nextCursor), results: page.events };
  });
  return router;
}
