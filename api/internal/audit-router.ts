import type Router from '@koa/router';
import { createRouter } from '../router';
import type { ApiDependencies } from '../context';
import { readAuditTrail } from '../../application/access/audit-log';
import { verifyAuditTrail } from '../../application/access/audit-verify';
import { requireScope } from './bearer-auth';
import { answerInternalErrors } from './errors';
import { nextPageLink } from './next-page-link';

/**
 * The audit trail (docs/access.md, "Audit trail: reading it"): every change an operator made, newest
 * first, keyset-paged, and the check of its hash chain. Read only: no route changes or deletes a row. Needs a
 * token with the scope `read`.
 */
export function internalAuditRouter({ knex, tokenChecker: tokens }: ApiDependencies): Router {
  const router = createRouter({ prefix: '/internal/v1/audit', sensitive: true });
  if (!tokens) throw new Error('the internal audit API needs a token checker');
  router.use(answerInternalErrors);

  router.get('/', requireScope(tokens, 'read'), async function auditTrailRoute(ctx) {
    const page = await readAuditTrail(knex, ctx.query);
    ctx.body = { next: nextPageLink(ctx, page.nextCursor), results: page.events };
  });
  // The same report as `partner-service audit verify`, 200 whether intact or not: `intact` says which.
  router.get('/verify', requireScope(tokens, 'read'), async function auditVerifyRoute(ctx) {
    ctx.body = await verifyAuditTrail(knex);
  });
  return router;
}
