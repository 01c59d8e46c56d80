// The server the contract test fuzzes: the whole webhook stack (dev server, PostgreSQL, API, workers) with the
// internal API on, seeded so that every route can answer 2xx: an app granted a company and its job for the
// listings, the SCIM dataset of the SCIM tests for Users and Groups, and two webhooks for the routes that take a
// webhook id: one delivered, one whose partner answers 503 (so retry-now and cancel have a waiting delivery);
// and an erasure for the route that takes an erasure id.
import { webhookIds } from '../../application/ingestion/ids';
import { DEVELOPMENT_SUBJECT_INDEX_KEY } from '../../lib/at-rest';
import { subjectKey } from '../../lib/subject-index';
import { APP_SCOPES } from '../../lib/vocabulary';
import { insertErasure } from '../../store/personal-data/erasures';
import type { Knex } from '../../db/database';
import candidateNew from '../fixtures/events/candidate-new.json';
import { insertApp, insertCompany, insertJob } from '../listings/support';
import { seedDataset, USERS } from '../scim/support';
import { eventually } from '../support/eventually';
import { startWebhookStack, type WebhookStack } from '../support/webhook-stack';
import { postWebhook } from '../support/api';
import { INTERNAL_TOKEN } from '../support/tokens';

export const CONTRACT_APP = { appId: 'contract-app', key: 'contract-app-key-0123456789' };

/** The seeded webhooks; schemathesis.toml draws their ids (UUIDv5 of the event ids) for `webhook_id`. */
export const SEEDED_WEBHOOKS = {
  delivered: webhookIds({ event_type: 'candidate', action: 'new', event_id: 'contract-delivered' }).webhookId,
  failing: webhookIds({ event_type: 'candidate', action: 'new', event_id: 'contract-failing' }).webhookId,
};

/** The seeded erasure, of a candidate no webhook names; schemathesis.toml draws its id for `erasure_id`. */
export const SEEDED_ERASURE = '00000000-0000-4000-8000-00000000e7a5';

async function seedDirectory(knex: Knex): Promise<void> {
  await seedDataset(knex);
  const roles = ['admin', 'owner', 'manager', 'member'];
  await insertCompany(
    knex,
    'acme',
    USERS.map((user, i) => [user.id, roles[i % roles.length]]),
  );
  await insertJob(knex, 'acme-job', 'acme', [
    [USERS[2].id, 'job_owner'],
    [USERS[3].id, 'viewer'],
  ]);
  // Every scope, so the partner API's operations answer more than the scope check's 403.
  await insertApp(knex, CONTRACT_APP, ['acme'], { scopes: APP_SCOPES });
}

/** Starts both seeded webhooks through the API; waits until the first is delivered and the second's first attempt failed. */
async function seedWebhooks(apiUrl: string): Promise<void> {
  const headers = { authorization: `Bearer ${INTERNAL_TOKEN}`, 'content-type': 'application/json' };
  for (const eventId of ['contract-delivered', 'contract-failing']) {
    const res = await postWebhook(apiUrl, INTERNAL_TOKEN, { ...candidateNew, event_id: eventId });
    if (res.status !== 202) throw new Error(`seeding ${eventId}: ${res.status} ${await res.text()}`);
  }
  const view = async (webhookId: string) => {
    const res = await fetch(`${apiUrl}/internal/v1/webhooks/${webhookId}`, { headers });
    return (await res.json()) as { status: string; attempts: unknown[] };
  };
  await eventually('the seeded webhooks to be delivered and waiting', async () => {
    const [delivered, failing] = [await view(SEEDED_WEBHOOKS.delivered), await view(SEEDED_WEBHOOKS.failing)];
    return delivered.status === 'delivered' && failing.status === 'pending' && failing.attempts.length === 1;
  });
}

/** The stack with the internal API enabled and the contract's seed; `env` adds configuration. */
export async function startContractStack(env: Record<string, string> = {}): Promise<WebhookStack> {
  const stack = await startWebhookStack({
    env: {
      INTERNAL_API_TOKEN: INTERNAL_TOKEN,
      PARTNER_MAX_PER_SECOND: '1000',
      // schemathesis calls the partner API far faster than a partner would: no budget in its way.
      PARTNER_API_REQUESTS_PER_MINUTE: '1000000',
      ...env,
    },
    // Every delivery but the failing seed is accepted at once, so fuzzed events end quickly.
    partnerHandler: (req, res) =>
      res.writeHead(req.headers['webhook-id'] === SEEDED_WEBHOOKS.failing ? 503 : 204).end(),
  });
  try {
    await seedDirectory(stack.db.knex);
    await seedWebhooks(stack.api.url);
    await insertErasure(stack.db.knex, {
      id: SEEDED_ERASURE,
      subjectKind: 'candidate_id',
      subjectKeys: [subjectKey(DEVELOPMENT_SUBJECT_INDEX_KEY, 'candidate_id', 'contract-nobody')!],
      keyIds: ['development'],
      companyId: null,
      requestedBy: 'contract-seed',
    });
    await stack.gateway.startErasure(SEEDED_ERASURE);
  } catch (error) {
    await stack.close();
    throw error;
  }
  return stack;
}
