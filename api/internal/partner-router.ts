import type Router from '@koa/router';
import { createRouter } from '../router';
import type { ApiDependencies } from '../context';
import { limitPartner, partnerStatus, pausePartner, resumePartner } from '../../application/partner-operator';
import { requireBearerToken } from './bearer-auth';
import { answerInternalErrors } from './errors';
import { jsonBody } from './json-body';

/**
 * The operator's controls of the partner: its status, pause, resume and the deployment's rate cap. Like the
 * webhook API, every route needs `Authorization: Bearer <INTERNAL_API_TOKEN>` and does not exist without it.
 */
export function internalPartnerRouter({ config, knex, logger }: ApiDependencies): Router {
  const router = createRouter({ prefix: '/internal/v1/partner', sensitive: true });
  if (!config.INTERNAL_API_TOKEN) return router;
  router.use(answerInternalErrors, requireBearerToken(config.INTERNAL_API_TOKEN));

  router.get('/', async function partnerStatusRoute(ctx) {
    ctx.body = await partnerStatus(knex, config);
  });
  router.post('/pause', jsonBody, async function pausePartnerRoute(ctx) {
    ctx.body = await pausePartner(knex, config, logger, ctx.request.body);
  });
  router.post('/resume', async function resumePartnerRoute(ctx) {
    ctx.body = await resumePartner(knex, config, logger);
  });
  router.post('/limit', jsonBody, async function limitPartnerRoute(ctx) {
    ctx.body = await limitPartner(knex, config, logger, ctx.request.body);
  });
  return router;
}
