import {
  limitEndpoint,
  partnerEndpoint,
  pauseEndpoint,
  resumeEndpoint,
} from '../../application/partner/partner-endpoint';
import { jsonBody } from '../internal/json-body';
import { actingApp, requireAppScope } from './app-auth';
import type { PartnerRoutes } from './routes';

/**
 * The partner's endpoint (`endpoint:manage`): its state, the partner's own pause and resume and its own rate, on
 * the gate every worker shares. The scope comes first, before any body is read.
 */
export const endpointRoutes: PartnerRoutes = (router, deps) => {
  const { knex, config } = deps;
  const scope = requireAppScope('endpoint:manage');
  router.get('/endpoint', scope, async function getPartnerEndpointRoute(ctx) {
    ctx.body = await partnerEndpoint(knex, config);
  });
  router.patch('/endpoint', scope, jsonBody, async function limitPartnerEndpointRoute(ctx) {
    ctx.body = await limitEndpoint(deps, actingApp(ctx), ctx.request.body);
  });
  router.post('/endpoint/pause', scope, jsonBody, async function pausePartnerEndpointRoute(ctx) {
    ctx.body = await pauseEndpoint(deps, actingApp(ctx), ctx.request.body);
  });
  router.post('/endpoint/resume', scope, async function resumePartnerEndpointRoute(ctx) {
    ctx.body = await resumeEndpoint(deps, actingApp(ctx));
  });
};
