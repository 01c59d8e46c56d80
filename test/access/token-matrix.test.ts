// The whole matrix of the internal API's token check: every internal operation of /openapi.json (which must be
// exactly the routes the routers serve) with no token, an unknown, a revoked and an expired token, a token of
// each single scope, and the shared INTERNAL_API_TOKEN. Every answer is asserted whole: status, body and
// WWW-Authenticate. An allowed request is one that needs no Temporal run and answers deterministically (415
// for a body without a media type, 404 for an unknown id, an empty page), which proves the check let it through.
// Then what the scopes show and open beyond the route table: a webhook's status without its body and excerpts
// for `ingest` alone; the codec server (/codec) for `decode` alone (header and UI path forms), CODEC_AUTH_TOKEN,
// and no other token; each refusal counted by reason and route pattern; and a revoked `decode` token refused by
// a running `partner-service api` process within REVOCATION_BOUND_MS.
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import type Router from '@koa/router';
import { defaultPayloadConverter } from '@temporalio/common';
import { payloadsToJson } from '../../api/codec/payloads-json';
import { uiCodecEndpoint } from '../../api/codec/router';
import { CODEC_SHARED_TOKEN_WARNING } from '../../api/codec/codec-auth';
import { API_ROUTERS } from '../../api/app';
import { createTemporalGateway } from '../../temporal/gateway';
import { createTokenChecker, REVOCATION_BOUND_MS } from '../../application/access/token-checker';
import { createApiToken, parseTokenRequest, revokeApiTokenNamed } from '../../application/access/tokens';
import { partnerStatus } from '../../application/partner/partner-operator';
import { loadConfig } from '../../lib/config';
import { createLogger } from '../../lib/logger';
import { TOKEN_SCOPES, type TokenScope } from '../../lib/vocabulary';
import type { Knex } from '../../db/database';
import { findFreePort } from '../../lib/ports';
import candidateNew from '../fixtures/events/candidate-new.json';
import { startTestApi, type TestApi } from '../support/api';
import { runCli, startCli, waitForExit } from '../support/cli';
import { useTestDatabase } from '../support/database';
import { authFailuresDuring } from '../support/metrics-text';
import { internalOperations } from '../support/openapi';
import { logLines } from '../support/log-lines';

const SHARED_TOKEN = 'matrix-shared-token-0123456789abcdef';
/** The scopes the issue gives each operation: the document must state exactly these. */
const ISSUE_SCOPES: Record<string, readonly TokenScope[]> = {
  'POST /internal/v1/webhooks': ['ingest'],
  'GET /internal/v1/webhooks/{webhook_id}': ['ingest', 'read'],
  'GET /internal/v1/webhooks': ['read'],
  'GET /internal/v1/partner': ['read'],
  'GET /internal/v1/ordering': ['read'],
  'POST /internal/v1/ordering/skip': ['operate'],
  'POST /internal/v1/ordering/retry': ['operate'],
  'GET /internal/v1/audit': ['read'],
  'GET /internal/v1/audit/verify': ['read'],
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
    'GET /internal/v1/ordering': { status: 200, body: { keys: [] } },
    'POST /internal/v1/ordering/skip': UNSUPPORTED,
    'POST /internal/v1/ordering/retry': UNSUPPORTED,
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
  return internalOperations(doc).map(({ method, template: path, operation }) => {
    const security: Array<{ InternalToken?: string[] }> = operation.security ?? [];
    const scopes = security.flatMap((requirement) => requirement.InternalToken ?? []) as TokenScope[];
    return {
      key: `${method.toUpperCase()} ${path}`,
      method: method.toUpperCase(),
      path: path.replace(/\{[a-z_]+\}/g, UNKNOWN_ID),
      scopes,
    };
  });
}

/** Every route layer the API's routers serve under /internal/ (router.use middleware has no methods, and is left out). */
function servedInternalRoutes(knex: Knex): Array<Router['stack'][number]> {
  const config = loadConfig({});
  const logger = createLogger('silent');
  const deps = {
    config,
    knex,
    logger,
    temporalGateway: createTemporalGateway(config, logger),
    tokenChecker: createTokenChecker({ knex, logger }),
  };
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
      for (const scope of TOKEN_SCOPES)
        made[scope] = (
          await createApiToken(knex, who, parseTokenRequest({ name: `only-${scope}`, scopes: scope }))
        ).token;
      made.revoked = (
        await createApiToken(knex, who, parseTokenRequest({ name: 'revoked', scopes: TOKEN_SCOPES.join(',') }))
      ).token;
      await revokeApiTokenNamed(knex, who, 'revoked');
      made.expired = (
        await createApiToken(
          knex,
          who,
          parseTokenRequest({ name: 'expired', scopes: TOKEN_SCOPES.join(','), expiresIn: '1h' }),
        )
      ).token;
      // Expired an hour ago: the table requires an expiry after the creation, so both move back.
      await knex.raw(
        `UPDATE api_tokens SET created_at = now() - interval '2 hours', expires_at = date_trunc('milliseconds', now()) - interval '1 hour' WHERE name = 'expired'`,
      );
      expiredAt = (await knex('api_tokens').where({ name: 'expired' }).first('expires_at')).expires_at.toISOString();
    });
    tokens = made;
    operations = documentedOperations((await (await fetch(`${api.api.url}/openapi.json`)).json()) as Document);
  });
  after(() => api?.close());

  const call = async (operation: Operation, token?: string): Promise<Answer> => {
    const res = await fetch(`${api.api.url}${operation.path}`, {
      method: operation.method,
      headers: token ? { authorization: `Bearer ${token}` } : {},
    });
    return { status: res.status, body: await res.json(), challenge: res.headers.get('www-authenticate') };
  };

  it('documents every internal route the routers serve, and no other, each with the scopes the issue gives it', () => {
    const served = servedInternalRoutes(api.db.knex);
    const documented = operations.map((operation) => {
      const layers = served.filter((layer) => layer.methods.includes(operation.method) && layer.match(operation.path));
      assert.equal(layers.length, 1, `${operation.key} is served by ${layers.length} routes`);
      return layers[0];
    });
    const undocumented = served
      .filter((layer) => !documented.includes(layer))
      .map((layer) => `${layer.methods.join(',')} ${String(layer.path)}`);
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
        assert.deepEqual(
          await call(operation, token),
          { status: 401, body: { detail }, challenge },
          `${operation.key} with ${token ? token.slice(0, 8) : 'no token'}`,
        );
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
          const needed =
            operation.scopes.length === 1
              ? `the scope "${operation.scopes[0]}"`
              : `one of the scopes ${operation.scopes.map((s) => `"${s}"`).join(', ')}`;
          const body = {
            detail: `The token "only-${scope}" does not have ${needed}, which this request needs.`,
            reason: 'missing_scope',
          };
          assert.deepEqual(
            answer,
            {
              status: 403,
              body,
              challenge: `Bearer realm="internal", error="insufficient_scope", scope="${operation.scopes.join(' ')}"`,
            },
            label,
          );
          tally.forbidden++;
        }
      }
    }
    // Each operation allows its own scopes only: one (two for a webhook's status) of the five; `decode` none.
    const expectedAllowed = operations.reduce((n, operation) => n + operation.scopes.length, 0);
    assert.deepEqual(tally, {
      allowed: expectedAllowed,
      forbidden: operations.length * TOKEN_SCOPES.length - expectedAllowed,
    });
    assert.ok(operations.every((operation) => !operation.scopes.includes('decode')));
  });

  it("shows `ingest` alone a webhook's status without its body and the partner's excerpts, and `read` everything", async () => {
    const id = randomUUID();
    const at = new Date('2026-01-05T10:00:00Z');
    await api.db.knex('webhook_events').insert({
      id,
      event_id: `matrix-${id}`,
      event_type: 'candidate',
      action: 'new',
      company_id: 'acme',
      body: JSON.stringify(candidateNew),
      workflow_id: `wf-${id}`,
      run_id: randomUUID(),
      status: 'failed',
      created_at: at,
      accepted_at: at,
      finished_at: at,
    });
    for (const attempt of [1, 2]) {
      await api.db.knex('webhook_attempts').insert({
        webhook_id: id,
        attempt,
        scheduled_at: at,
        started_at: at,
        duration_ms: 5,
        http_status: 500,
        succeeded: false,
        response_body: `no such candidate ${attempt}`,
      });
    }
    const status = async (token: string) => {
      const res = await fetch(`${api.api.url}/internal/v1/webhooks/${id}`, {
        headers: { authorization: `Bearer ${token}` },
      });
      return {
        status: res.status,
        body: (await res.json()) as Record<string, unknown> & { attempts: Array<Record<string, unknown>> },
      };
    };
    const full = await status(tokens.read);
    assert.equal(full.status, 200);
    assert.deepEqual(full.body.event, candidateNew);
    assert.deepEqual(
      full.body.attempts.map((attempt) => attempt.response_body),
      ['no such candidate 1', 'no such candidate 2'],
    );
    assert.deepEqual(await status(SHARED_TOKEN), full);

    const summary = await status(tokens.ingest);
    assert.equal(summary.status, 200);
    // Exactly the fields `read` sees, less `event` and each attempt's `response_body`: absent, not null.
    const { event: _event, attempts, ...rest } = full.body;
    assert.deepEqual(summary.body, {
      ...rest,
      attempts: attempts.map(({ response_body: _excerpt, ...attempt }) => attempt),
    });
    assert.ok(!('event' in summary.body) && summary.body.attempts.every((attempt) => !('response_body' in attempt)));
    assert.ok(
      !JSON.stringify(summary.body).includes(candidateNew.data.candidate.email) &&
        !JSON.stringify(summary.body).includes('no such candidate'),
    );
    // The other cases expect an empty delivery log.
    await api.db.knex('webhook_events').where({ id }).delete();
  });

  it('lets the shared INTERNAL_API_TOKEN through every operation', async () => {
    const allowed = allowedAnswers(JSON.parse(JSON.stringify(await partnerStatus(api.db.knex, loadConfig({})))));
    for (const operation of operations)
      assertAllowed(
        await call(operation, SHARED_TOKEN),
        allowed[operation.key],
        `${operation.key} with INTERNAL_API_TOKEN`,
      );
  });
});

describe('codec server: the scope decode, CODEC_AUTH_TOKEN and the auth-failure count', function () {
  this.timeout(60_000);
  const CODEC_TOKEN = 'matrix-codec-token-0123456789';
  let api: TestApi;
  const tokens: Record<string, string> = {};

  before(async () => {
    const env = {
      INTERNAL_API_TOKEN: SHARED_TOKEN,
      CODEC_AUTH_TOKEN: CODEC_TOKEN,
      PAYLOAD_ENCRYPTION_KEYS: `k1:${randomBytes(32).toString('base64')}`,
    };
    api = await startTestApi(env, async (knex) => {
      const who = { actor: 'matrix-test' };
      const make = async (name: string, scopes: string, expiresIn?: string) =>
        (tokens[name] = (await createApiToken(knex, who, parseTokenRequest({ name, scopes, expiresIn }))).token);
      await make('decoder', 'decode');
      await make('everything-else', TOKEN_SCOPES.filter((scope) => scope !== 'decode').join(','));
      await make('revoked-decoder', 'decode');
      await revokeApiTokenNamed(knex, who, 'revoked-decoder');
    });
  });
  after(() => api?.close());

  const payloads = payloadsToJson([defaultPayloadConverter.toPayload(candidateNew)]);
  const post = async (path: string, token?: string) => {
    const res = await fetch(`${api.api.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(token && { authorization: `Bearer ${token}` }) },
      body: JSON.stringify(payloads),
    });
    return { status: res.status, body: await res.json(), challenge: res.headers.get('www-authenticate') };
  };
  /** The codec's UI form: the token in the path, as Temporal UI is given it. */
  const uiPath = (token: string, action: string) =>
    `${new URL(uiCodecEndpoint(api.api.url, token)).pathname}/${action}`;

  it('decodes for a named token with `decode` and for CODEC_AUTH_TOKEN, in the header and the UI path forms', async () => {
    for (const token of [tokens.decoder, CODEC_TOKEN]) {
      const encoded = await post('/codec/encode', token);
      assert.equal(encoded.status, 200);
      assert.notDeepEqual(encoded.body, payloads);
      const encodedBody = JSON.stringify(encoded.body);
      for (const path of ['/codec/decode', uiPath(token, 'decode')]) {
        const res = await fetch(`${api.api.url}${path}`, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            authorization: path.includes('/ui/') ? '' : `Bearer ${token}`,
          },
          body: encodedBody,
        });
        assert.deepEqual([res.status, await res.json()], [200, payloads], path.replace(token, '<token>'));
      }
      assert.equal((await post(uiPath(token, 'encode'))).status, 200);
    }
  });

  it('refuses every other token with 403 naming decode (INTERNAL_API_TOKEN included), and unknown or revoked ones with 401', async () => {
    const forbidden = (actor: string) => ({
      status: 403,
      body: {
        detail: `The token "${actor}" does not have the scope "decode", which this request needs.`,
        reason: 'missing_scope',
      },
      challenge: 'Bearer realm="codec", error="insufficient_scope", scope="decode"',
    });
    const invalid = (detail: string) => ({
      status: 401,
      body: { detail },
      challenge: 'Bearer realm="codec", error="invalid_token"',
    });
    const cases: Array<[string, unknown]> = [
      [tokens['everything-else'], forbidden('everything-else')],
      [SHARED_TOKEN, forbidden('INTERNAL_API_TOKEN')],
      [tokens['revoked-decoder'], invalid('Invalid token: it has been revoked.')],
      [`${CODEC_TOKEN}x`, invalid('Invalid token.')],
    ];
    for (const [token, expected] of cases) {
      for (const action of ['encode', 'decode']) {
        assert.deepEqual(await post(`/codec/${action}`, token), expected, `${action} with ${token.slice(0, 8)}`);
        assert.deepEqual(await post(uiPath(token, action)), expected, `ui ${action} with ${token.slice(0, 8)}`);
      }
    }
    assert.deepEqual(await post('/codec/decode'), {
      status: 401,
      body: { detail: 'Authentication credentials were not provided.' },
      challenge: 'Bearer realm="codec"',
    });
  });

  it('counts each refusal by reason and route pattern, never a token or a raw path', async () => {
    const { gained, text } = await authFailuresDuring(api.api.url, async () => {
      await post(uiPath(tokens['everything-else'], 'decode'));
      await post(uiPath(tokens['everything-else'], 'decode'));
      await post(uiPath(tokens['revoked-decoder'], 'decode'));
      await post('/codec/decode');
      await fetch(`${api.api.url}/internal/v1/webhooks/${UNKNOWN_ID}`, {
        headers: { authorization: `Bearer ${tokens.decoder}` },
      });
    });
    assert.deepEqual(gained, {
      'missing_scope /codec/ui/:token/decode': 2,
      'revoked /codec/ui/:token/decode': 1,
      'missing_token /codec/decode': 1,
      'missing_scope /internal/v1/webhooks/:webhook_id': 1,
    });
    for (const token of [...Object.values(tokens), SHARED_TOKEN, CODEC_TOKEN]) {
      assert.ok(!text.includes(token) && !text.includes(token.slice(0, 12)), 'a token in /metrics');
    }
  });
});

describe('a revoked decode token on a running api process', function () {
  this.timeout(120_000);
  const db = useTestDatabase();
  let api: ReturnType<typeof startCli> | undefined;
  after(async () => {
    api?.child.kill('SIGKILL');
    if (api) await waitForExit(api.child);
  });

  it('`tokens create --scope decode` works on the codec, and `tokens revoke` shuts it out within 5 s; CODEC_AUTH_TOKEN warns once', async () => {
    const codecToken = 'revocation-codec-token-0123456789';
    const env = { PATH: process.env.PATH, DATABASE_URL: db.url, LOG_LEVEL: 'info' };
    const created = await runCli(['tokens', 'create', '--name', 'temporal-ui', '--scope', 'decode'], env);
    assert.equal(created.code, 0, created.stderr);
    const { token, scopes } = JSON.parse(created.stdout) as { token: string; scopes: string[] };
    assert.deepEqual(scopes, ['decode']);
    const port = await findFreePort();
    const keys = `k1:${randomBytes(32).toString('base64')}`;
    api = startCli(
      ['api'],
      { ...env, HOST: '127.0.0.1', PORT: String(port), PAYLOAD_ENCRYPTION_KEYS: keys, CODEC_AUTH_TOKEN: codecToken },
      process.cwd(),
      /API listening/,
    );
    await api.started;
    const url = `http://127.0.0.1:${port}`;
    const decode = async (path: string, authorization = '') =>
      (
        await fetch(`${url}${path}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization },
          body: '{"payloads":[]}',
        })
      ).status;
    const uiDecode = (secret: string) => decode(`${new URL(uiCodecEndpoint(url, secret)).pathname}/decode`);
    assert.deepEqual(
      [await decode('/codec/decode', `Bearer ${token}`), await uiDecode(token), await uiDecode(codecToken)],
      [200, 200, 200],
    );

    const revokeStarted = Date.now();
    const revoked = await runCli(['tokens', 'revoke', 'temporal-ui'], env);
    assert.equal(revoked.code, 0, revoked.stderr);
    const revokedAt = (
      (await db.knex('api_tokens').where({ name: 'temporal-ui' }).first('revoked_at')) as { revoked_at: Date }
    ).revoked_at.getTime();
    for (;;) {
      const [header, path] = [await decode('/codec/decode', `Bearer ${token}`), await uiDecode(token)];
      if (header === 401 && path === 401) break;
      assert.ok([200, 401].includes(header) && [200, 401].includes(path), `${header} ${path}`);
      if (Date.now() - revokeStarted > 3 * REVOCATION_BOUND_MS)
        assert.fail('the revoked decode token is still accepted');
      await delay(25);
    }
    const refusedAfter = Date.now() - revokedAt;
    console.log(
      `      the revoked decode token refused ${refusedAfter} ms after revoked_at; bound ${REVOCATION_BOUND_MS} ms`,
    );
    assert.ok(refusedAfter <= REVOCATION_BOUND_MS, `refused ${refusedAfter} ms after the revocation`);
    assert.equal(await uiDecode(codecToken), 200);

    const lines = logLines(api.output.stdout);
    assert.deepEqual(
      lines.filter((line) => line.msg === CODEC_SHARED_TOKEN_WARNING).map((line) => line.level),
      [40],
    );
    const refusals = lines.filter((line) => line.msg === 'request refused by an auth check');
    assert.ok(refusals.length >= 2, api.output.stdout);
    for (const line of refusals) {
      assert.deepEqual([line.level, line.reason, line.method], [40, 'revoked', 'POST']);
      assert.ok(['/codec/decode', '/codec/ui/:token/decode'].includes(line.route ?? ''), line.route);
      assert.match(line.request_id ?? '', /^[0-9a-f-]{36}$/);
    }
    const all = api.output.stdout + api.output.stderr;
    for (const secret of [token, codecToken])
      assert.ok(!all.includes(secret) && !all.includes(secret.slice(0, 12)), 'a token in the log');
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
