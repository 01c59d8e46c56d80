import type Router from '@koa/router';
import { createRouter } from '../router';
import type { ApiDependencies } from '../context';
import { limitPartner, partnerStatus, pausePartner, resumePartner } from '../../application/partner/partner-operator';
import { operatorOf, requireScope } from './bearer-auth';
import { answerInternalErrors } from './errors';
import { jsonBody } from './json-body';

/**
 * The operator's controls of the partner: its status, pause, resume and the deployment's rate cap. Like the
 * webhook API, every route needs a token with its scope: `read` for the status, `operate` for the rest.
 */
export function internalPartnerRouter({ config, knex, logger, tokenChecker: tokens }: ApiDependencies): Router {
  const router = createRouter({ prefix: '/internal/v1/partner', sensitive: true });
  if (!tokens) throw new Error('the internal partner API needs a token checker');
  router.use(answerInternalErrors);

  router.get('/', requireScope(tokens, 'read'), async function partnerStatusRoute(ctx) {
    ctx.body = await partnerStatus(knex, config);
  });
  router.post('/pause', requireScope(tokens, 'operate'), jsonBody, async function pausePartnerRoute(ctx) {
    ctx.body = await pausePartner(knex, config, logger, operatorOf(ctx), ctx.request.body);
  });
  router.post('/resume', requireScope(tokens, 'operate'), async function resumePartnerRoute(ctx) {
    ctx.body = await resumePartner(knex, config, logger, operatorOf(ctx));
  });
  router.post('/limit', requireScope(tokens, 'operate'), jsonBody, async function limitPartnerRoute(ctx) {
    ctx.body = await limitPartner(knex, config, logger, operatorOf(ctx), ctx.request.body);
  });
  return router;
}
