import type Router from '@koa/router';
import { createRouter } from '../router';
import type { ApiDependencies } from '../context';
import { answerInternalErrors } from '../internal/errors';
import { requirePartnerApp, type PartnerState } from './app-auth';
import { requestBudget } from './request-budget';
import type { PartnerRoutes } from './routes';
import { auditRoutes } from './audit-routes';
import { deliveryRoutes } from './deliveries-routes';
import { endpointRoutes } from './endpoint-routes';
import { feedRoutes } from './feed-routes';
import { healthRoutes } from './health-routes';
import { portalSessionRoutes } from './portal-sessions-routes';
import { recoveryRoutes } from './recoveries-routes';
import { signingSecretRoutes } from './signing-secrets-routes';
import { testEventRoutes } from './test-events-routes';

/** The partner API's resources, one module each. */
const PARTNER_ROUTES: readonly PartnerRoutes[] = [
  deliveryRoutes,
  feedRoutes,
  healthRoutes,
  auditRoutes,
  recoveryRoutes,
  endpointRoutes,
  signingSecretRoutes,
  testEventRoutes,
  portalSessionRoutes,
];

/**
 * `/partner/v1`: the partner's own window on its deliveries and its endpoint (docs/partners.md, "The partner API"),
 * authenticated with the listings' X-App-Id and X-App-Key and answering errors as `{"detail": …}`. Every route
 * needs its scope (requireAppScope) and sees only the app's granted companies.
 */
export function partnerRouter(deps: ApiDependencies): Router {
  const { knex, config, temporalGateway } = deps;
  if (!temporalGateway) throw new Error('the partner API needs a Temporal gateway');
  const router = createRouter<PartnerState>({ prefix: '/partner/v1', sensitive: true });
  router.use(answerInternalErrors);
  router.use(requirePartnerApp(knex, requestBudget(config.PARTNER_API_REQUESTS_PER_MINUTE)));

  router.get('/app', function partnerAppRoute(ctx) {
    const { appId, name, scopes, companyIds } = ctx.state.app;
    ctx.body = { app_id: appId, name, scopes, company_ids: companyIds };
  });
  for (const routes of PARTNER_ROUTES) routes(router, { ...deps, temporalGateway });
  return router;
}
