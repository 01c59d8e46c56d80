import { readPartnerAudit } from '../../application/access/partner-audit';
import { nextPageLink } from '../internal/next-page-link';
import { requireAppScope } from './app-auth';
import type { PartnerRoutes } from './routes';

/** The audit trail of the partner's deliveries and endpoint (`deliveries:read`). */
export const auditRoutes: PartnerRoutes = (router, { knex }) => {
  router.get('/audit', requireAppScope('deliveries:read'), async function listPartnerAuditRoute(ctx) {
    const page = await readPartnerAudit(knex, ctx.state.app, ctx.query);
    ctx.body = { next: nextPageLink(ctx, page.nextCursor), results: page.events };
  });
};
