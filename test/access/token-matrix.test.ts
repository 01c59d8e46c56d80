// The whole matrix of the internal API's token check: every internal operation of /openapi.json (which must be
// exactly the routes the routers serve) with no token, an unknown, a revoked and an expired token, a token of
// each single scope, and the shared INTERNAL_API_TOKEN. Every answer is asserted whole: status, body and
// WWW-Authenticate. An allowed request is one that needs no Temporal run and answers deterministically (415
// for a body without a media type, 404 for an unknown id, an empty page), which proves the check let it through.
import assert from 'node:assert/strict';
import type Router from '@koa/router';
import { API_ROUTERS } from '../../api/app';
import { createTemporalGateway } from '../../application/temporal-gateway';
import { createTokenChecker } from '../../application/token-checker';
import { createApiToken, parseTokenRequest, revokeApiTokenNamed } from '../../application/tokens';
import { partnerStatus } from '../../application/partner-operator';
import { loadConfig } from '../../lib/config';
import { createLogger } from '../../lib/logger';
import { TOKEN_SCOPES, type TokenScope } from '../../lib/vocabulary';
import type { Knex } from '../../db/database';
import { startTestApi, type TestApi } from '../support/api';

const SHARED_TOKEN = 'matrix-shared-token-0123456789abcdef';
/** The scopes the issue gives each operation: the document must state exactly these. */
const ISSUE_SCOPES: Record<string, readonly TokenScope[]> = {
  'POST /internal/v1/webhooks': ['ingest'],
  'GET /internal/v1/webhooks/{webhook_id}': ['ingest', 'read'],
  'GET /internal/v1/webhooks': ['read'],
  'GET /internal/v1/partner': ['read'],
  'GET /internal/v1/audit': ['read'],
  'POST /internal/v1/webhooks/{webhook_id}/retry-now': ['operate'],
  'POST /internal/v1/webhooks/{webhook_id}/cancel': ['operate'],
  'POST /internal/v1/webhooks/{webhook_id}/redeliver': ['operate'],
  'POST /internal/v1/webhooks/redeliver': ['operate'],
  'POST /internal/v1/partner/pause': ['operate'],
  'POST /internal/v1/partner/resume': ['operate'],
  'POST /internal/v1/partner/limit': ['operate'],
  'POST /internal/v1/erasures': ['erase'],
  'GET /internal/v1/erasures/{erasure_id}': ['erase'],
};
const UNKNOWN_ID = '00000000-0000-4000-8000-0000000000aa';
const UNSUPPORTED = { status: 415, body: { detail: 'Unsupported media type "" in request: send application/json.' } };
const NOT_FOUND = { status: 404, body: { detail: 'Not found.' } };

interface Answer {
  readonly status: number;
  readonly body: unknown;
  readonly challenge: string | null;
}
interface Operation {
  readonly key: string;
  readonly method: string;
  readonly path: string;
  readonly scopes: readonly TokenScope[];
}

/** What an allowed request of each operation answers; operations added later without an entry fall back to a 2xx check. */
function allowedAnswers(partner: unknown): Record<string, Omit<Answer, 'challenge'>> {
  return {
    'POST /internal/v1/webhooks': UNSUPPORTED,
    'GET /internal/v1/webhooks/{webhook_id}': NOT_FOUND,
    'GET /internal/v1/webhooks': { status: 200, body: { next: null, results: [] } },
    'GET /internal/v1/partner': { status: 200, body: partner },
    'POST /internal/v1/webhooks/{webhook_id}/retry-now': NOT_FOUND,
    'POST /internal/v1/webhooks/{webhook_id}/cancel': NOT_FOUND,
    'POST /internal/v1/webhooks/{webhook_id}/redeliver': NOT_FOUND,
    'POST /internal/v1/webhooks/redeliver': UNSUPPORTED,
    'POST /internal/v1/partner/pause': UNSUPPORTED,
    'POST /internal/v1/partner/resume': { status: 200, body: partner },
    'POST /internal/v1/partner/limit': UNSUPPORTED,
    'POST /internal/v1/erasures': UNSUPPORTED,
    'GET /internal/v1/erasures/{erasure_id}': NOT_FOUND,
  };
}

/** The internal operations the document states, with the scopes of their security requirements (any one of them). */
type Document = { paths: Record<string, Record<string, { security?: Array<{ InternalToken?: string[] }> }>> };
function documentedOperations(doc: Document): Operation[] {
  return Object.entries(doc.paths)
    .filter(([path]) => path.startsWith('/internal/'))
    .flatMap(([path, item]) =>
      Object.entries(item)
        .filter(([method]) => ['get', 'post', 'put', 'patch', 'delete'].includes(method))
        .map(([method, operation]) => {
          const scopes = (operation.security ?? []).flatMap((requirement) => requirement.InternalToken ?? []) as TokenScope[];
          return { key: `${method.toUpperCase()} ${path}`, method: method.toUpperCase(), path: path.replace(/\{[a-z_]+\}/g, UNKNOWN_ID), scopes };
        }),
    );
}

/** Every route layer the API's routers serve under /internal/ (router.use middleware has no methods, and is left out). */
function servedInternalRoutes(knex: Knex): Array<Router['stack'][number]> {
  const config = loadConfig({});
  const logger = createLogger('silent');
  const deps = { config, knex, logger, temporalGateway: createTemporalGateway(config, logger), tokenChecker: createTokenChecker({ knex, logger }) };
  return API_ROUTERS.flatMap((factory) => factory(deps).stack).filter(
    (layer) => layer.methods.length > 0 && String(layer.path).replaceAll('\\/', '/').includes('/internal/'),
  );
}

describe('internal API: the token matrix', function () {
  this.timeout(60_000);
  let api: TestApi;
  let tokens: Record<string, string>;
  let expiredAt: string;
  let operations: Operation[];

  before(async () => {
    const made: Record<string, string> = {};
    api = await startTestApi({ INTERNAL_API_TOKEN: SHARED_TOKEN }, async (knex) => {
      const who = { actor: 'matrix-test' };
      for (const scope of TOKEN_SCOPES) made[scope] = (await createApiToken(knex, who, parseTokenRequest({ name: `only-${scope}`, scopes: scope }))).token;
      made.revoked = (await createApiToken(knex, who, parseTokenRequest({ name: 'revoked', scopes: TOKEN_SCOPES.join(',') }))).token;
      await revokeApiTokenNamed(knex, who, 'revoked');
      made.expired = (await createApiToken(knex, who, parseTokenRequest({ name: 'expired', scopes: TOKEN_SCOPES.join(','), expiresIn: '1h' }))).token;
      // Expired an hour ago: the table requires an expiry after the creation, so both move back.
      await knex.raw(`UPDATE api_tokens SET created_at = now() - interval '2 hours', expires_at = date_trunc('milliseconds', now()) - interval '1 hour' WHERE name = 'expired'`);
      expiredAt = (await knex('api_tokens').where({ name: 'expired' }).first('expires_at')).expires_at.toISOString();
    });
    tokens = made;
    operations = documentedOperations((await (await fetch(`${api.api.url}/openapi.json`)).json()) as Document);
  });
  after(() => api?.close());

  const call = async (operation: Operation, token?: string): Promise<Answer> => {
    const res = await fetch(`${api.api.url}${operation.path}`, { method: operation.method, headers: token ? { authorization: `Bearer ${token}` } : {} });
    return { status: res.status, body: await res.json(), challenge: res.headers.get('www-authenticate') };
  };

  it('documents every internal route the routers serve, and no other, each with the scopes the issue gives it', () => {
    const served = servedInternalRoutes(api.db.knex);
    const documented = operations.map((operation) => {
      const layers = served.filter((layer) => layer.methods.includes(operation.method) && layer.match(operation.path));
      assert.equal(layers.length, 1, `${operation.key} is served by ${layers.length} routes`);
      return layers[0];
    });
    const undocumented = served.filter((layer) => !documented.includes(layer)).map((layer) => `${layer.methods.join(',')} ${String(layer.path)}`);
    assert.deepEqual(undocumented, []);
    assert.ok(operations.length >= 13, String(operations.length));
    for (const operation of operations) assert.deepEqual(operation.scopes, ISSUE_SCOPES[operation.key], operation.key);
  });

  it('refuses every operation without a token, or with an unknown, a revoked or an expired one (401 with WWW-Authenticate)', async () => {
    const unknown = `pis_${'ab'.repeat(16)}_${'x'.repeat(43)}`;
    const cases: Array<[string | undefined, string, string]> = [
      [undefined, 'Authentication credentials were not provided.', 'Bearer realm="internal"'],
      [unknown, 'Invalid token.', 'Bearer realm="internal", error="invalid_token"'],
      ['not-a-token-at-all', 'Invalid token.', 'Bearer realm="internal", error="invalid_token"'],
      [tokens.revoked, 'Invalid token: it has been revoked.', 'Bearer realm="internal", error="invalid_token"'],
      [tokens.expired, `Invalid token: it expired at ${expiredAt}.`, 'Bearer realm="internal", error="invalid_token"'],
    ];
    let checked = 0;
    for (const operation of operations) {
      for (const [token, detail, challenge] of cases) {
        assert.deepEqual(await call(operation, token), { status: 401, body: { detail }, challenge }, `${operation.key} with ${token ? token.slice(0, 8) : 'no token'}`);
        checked++;
      }
    }
    assert.equal(checked, operations.length * cases.length);
  });

  it('lets each single-scope token through exactly where its scope is needed, and answers 403 naming the scope elsewhere', async () => {
    const allowed = allowedAnswers(JSON.parse(JSON.stringify(await partnerStatus(api.db.knex, loadConfig({})))));
    const tally = { allowed: 0, forbidden: 0 };
    for (const operation of operations) {
      for (const scope of TOKEN_SCOPES) {
        const answer = await call(operation, tokens[scope]);
        const label = `${operation.key} with only-${scope}`;
        if (operation.scopes.includes(scope)) {
          assertAllowed(answer, allowed[operation.key], label);
          tally.allowed++;
        } else {
          const needed = operation.scopes.length === 1 ? `the scope "${operation.scopes[0]}"` : `one of the scopes ${operation.scopes.map((s) => `"${s}"`).join(', ')}`;
          const body = { detail: `The token "only-${scope}" does not have ${needed}, which this request needs.`, reason: 'missing_scope' };
          assert.deepEqual(answer, { status: 403, body, challenge: `Bearer realm="internal", error="insufficient_scope", scope="${operation.scopes.join(' ')}"` }, label);
          tally.forbidden++;
        }
      }
    }
    // Each operation allows its own scopes only: one (two for a webhook's status) of the four.
    const expectedAllowed = operations.reduce((n, operation) => n + operation.scopes.length, 0);
    assert.deepEqual(tally, { allowed: expectedAllowed, forbidden: operations.length * TOKEN_SCOPES.length - expectedAllowed });
  });

  it('lets the shared INTERNAL_API_TOKEN through every operation', async () => {
    const allowed = allowedAnswers(JSON.parse(JSON.stringify(await partnerStatus(api.db.knex, loadConfig({})))));
    for (const operation of operations) assertAllowed(await call(operation, SHARED_TOKEN), allowed[operation.key], `${operation.key} with INTERNAL_API_TOKEN`);
  });
});

/** The route's own answer: exactly the one expected, or (an operation without an entry yet) a 2xx, 400, 404 or 415, never a refusal. */
function assertAllowed(answer: Answer, expected: Omit<Answer, 'challenge'> | undefined, label: string) {
  if (expected) {
    assert.deepEqual(answer, { ...expected, challenge: null }, label);
    return;
  }
  assert.ok([200, 400, 404, 415].includes(answer.status), `${label}: ${answer.status} ${JSON.stringify(answer.body)}`);
  assert.equal(answer.challenge, null, label);
}
