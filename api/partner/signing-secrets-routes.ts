import {
  createSigningSecret,
  deleteSigningSecret,
  listSigningSecretSummaries,
} from '../../application/partner/signing-secrets';
import { actingApp, requireAppScope } from './app-auth';
import type { PartnerRoutes } from './routes';

/**
 * The endpoint's signing secrets (docs/partners.md, "Signing secrets"): made (the secret shown once), listed (never a
 * secret) and ended early. Each needs `endpoint:manage`.
 */
export const signingSecretRoutes: PartnerRoutes = (router, { knex, config }) => {
  router.post('/signing-secrets', requireAppScope('endpoint:manage'), async function createSigningSecretRoute(ctx) {
    const created = await createSigningSecret(knex, config, actingApp(ctx));
    ctx.status = 201;
    ctx.set('Cache-Control', 'no-store');
    ctx.body = created;
  });

  router.get('/signing-secrets', requireAppScope('endpoint:manage'), async function listSigningSecretsRoute(ctx) {
    ctx.body = { signing_secrets: await listSigningSecretSummaries(knex, config) };
  });

  router.delete(
    '/signing-secrets/:secret_id',
    requireAppScope('endpoint:manage'),
    async function deleteSigningSecretRoute(ctx) {
      await deleteSigningSecret(knex, config, actingApp(ctx), ctx.params.secret_id);
      ctx.status = 204;
    },
  );
};
