import { partnerHealth } from '../../application/partner/partner-health';
import { requireAppScope } from './app-auth';
import type { PartnerRoutes } from './routes';

/** The partner's health (`deliveries:read`): its companies' attempts and backlog, the gate and the breaker. */
export const healthRoutes: PartnerRoutes = (router, { knex, config }) => {
  router.get('/health', requireAppScope('deliveries:read'), async function getPartnerHealthRoute(ctx) {
    ctx.body = await partnerHealth(knex, config, ctx.state.app.companyIds);
  });
};
