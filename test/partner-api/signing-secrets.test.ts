// The signing secrets through the partner API, on the real API and PostgreSQL: made (shown once, sealed under the
// payload keys), listed with the configuration's, ended early, refused for the current and the configuration's, and
// what the worker reads from them (the keys, the use noted at most once a minute); keys status and reseal cover them.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createSigningKeys } from '../../activities/partner/signing-keys';
import { createSigningSecret } from '../../application/partner/signing-secrets';
import { keysStatus, resealAll } from '../../application/personal-data/key-rotation';
import { reportDataAtRest } from '../../application/personal-data/at-rest-report';
import { dataAtRest } from '../../lib/at-rest';
import { loadConfig } from '../../lib/config';
import { createLogger } from '../../lib/logger';
import { secretKey, signingKeysNow } from '../../store/partner/signing-secrets';
import { startTestApi, type TestApi } from '../support/api';
import { resetAuditTrail } from '../support/audit-trail';
import { capturingLogger } from '../support/capturing-logger';
import { insertCompany } from '../listings/support';
import { partnerApp, partnerCall } from './support';

const key = (id: string) => `${id}:${randomBytes(32).toString('base64')}`;
const [K1, K2] = [key('k1'), key('k2')];
const CONFIGURED = `whsec_${randomBytes(32).toString('base64')}`;
const ENV = { PAYLOAD_ENCRYPTION_KEYS: K1, PARTNER_SIGNING_SECRETS: CONFIGURED };
const HOUR_MS = 3_600_000;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('partner API: signing secrets', () => {
  let stack: TestApi;
  let headers: Record<string, string>;
  const config = loadConfig(ENV);
  const call = (method: string, path: string) => partnerCall(stack.api.url, headers, method, path);
  const rows = () =>
    stack.db
      .knex('partner_signing_secrets')
      .orderBy('created_at')
      .select('id', 'secret_text', 'secret_sealed', 'secret_key_id', 'created_at', 'expires_at', 'deleted_at');

  before(async () => {
    stack = await startTestApi(ENV);
    await insertCompany(stack.db.knex, 'acme');
    headers = (await partnerApp(stack.db.knex, 'secrets-app', ['acme'], ['endpoint:manage'])).headers;
  });
  after(async () => stack.close());
  beforeEach(async () => {
    await stack.db.knex('partner_signing_secrets').delete();
    await resetAuditTrail(stack.db.knex);
  });

  it('POST shows a whsec_ secret once, sealed at rest under the payload key and bound to its row; GET never shows it', async () => {
    const before = await call('GET', '/signing-secrets');
    assert.deepEqual(before.body, {
      signing_secrets: [
        { id: 'config-1', created_at: null, expires_at: null, last_used_at: null, source: 'configuration' },
      ],
    });
    const created = await call('POST', '/signing-secrets');
    assert.equal(created.status, 201);
    assert.equal(created.headers['cache-control'], 'no-store');
    assert.deepEqual(Object.keys(created.body), ['id', 'secret', 'created_at', 'expires_at']);
    assert.match(created.body.id, UUID);
    assert.match(created.body.secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
    assert.equal(secretKey(created.body.secret).length, 32);
    assert.equal(created.body.expires_at, null);

    const [row] = await rows();
    assert.deepEqual([row.id, row.secret_text, row.secret_key_id], [created.body.id, null, 'v3:k1']);
    assert.ok(!row.secret_sealed.includes(Buffer.from(created.body.secret)));
    assert.equal(row.created_at.toISOString(), created.body.created_at);

    const listed = await call('GET', '/signing-secrets');
    assert.equal(listed.status, 200);
    assert.ok(!listed.text.includes(created.body.secret.slice(6, 30)));
    const configEnd = new Date(row.created_at.getTime() + 24 * HOUR_MS).toISOString();
    assert.deepEqual(listed.body.signing_secrets, [
      { id: 'config-1', created_at: null, expires_at: configEnd, last_used_at: null, source: 'configuration' },
      { id: created.body.id, created_at: created.body.created_at, expires_at: null, last_used_at: null, source: 'api' },
    ]);
    // The worker's keys: the configuration's during its overlap, then the new one, opened.
    const keys = await signingKeysNow(stack.db.knex, config, dataAtRest(config));
    assert.deepEqual(keys, {
      keys: [secretKey(CONFIGURED), secretKey(created.body.secret)],
      apiIds: [created.body.id],
      unreadable: [],
    });
    const audit = await stack.db.knex('audit_events').select('actor', 'action', 'target', 'parameters', 'outcome');
    assert.deepEqual(audit, [
      {
        actor: 'app:secrets-app',
        action: 'signing_secret.create',
        target: created.body.id,
        parameters: {},
        outcome: 'succeeded',
      },
    ]);
  });

  it('a second secret ends the first an overlap later; DELETE ends it now; the current one and the configuration’s are 409', async () => {
    const first = (await call('POST', '/signing-secrets')).body;
    const second = (await call('POST', '/signing-secrets')).body;
    const listed = (await call('GET', '/signing-secrets')).body.signing_secrets;
    const overlapEnd = new Date(Date.parse(second.created_at) + 24 * HOUR_MS).toISOString();
    assert.deepEqual(
      listed.map((s: { id: string; expires_at: string | null }) => [s.id, s.expires_at]),
      [
        ['config-1', new Date(Date.parse(first.created_at) + 24 * HOUR_MS).toISOString()],
        [first.id, overlapEnd],
        [second.id, null],
      ],
    );

    const current = await call('DELETE', `/signing-secrets/${second.id}`);
    assert.equal(current.status, 409);
    assert.equal(current.body.reason, 'current_secret');
    const configured = await call('DELETE', '/signing-secrets/config-1');
    assert.equal(configured.status, 409);
    assert.deepEqual(configured.body, {
      detail:
        'This signing secret comes from the configuration (PARTNER_SIGNING_SECRETS): the API cannot delete it. ' +
        'An operator removes it from PARTNER_SIGNING_SECRETS.',
      reason: 'configuration_secret',
    });

    const ended = await call('DELETE', `/signing-secrets/${first.id}`);
    assert.deepEqual([ended.status, ended.text], [204, '']);
    assert.deepEqual(
      (await call('GET', '/signing-secrets')).body.signing_secrets.map((s: { id: string }) => s.id),
      ['config-1', second.id],
    );
    const row = (await rows()).find((r) => r.id === first.id)!;
    assert.deepEqual([row.secret_sealed, row.secret_key_id], [null, null], 'an ended secret is wiped');
    assert.ok(row.deleted_at);

    for (const id of [first.id, 'config-2', 'not-a-secret', '6f1c2a7e-0d4b-4c39-9a55-6a0f3e2b9c11']) {
      const gone = await call('DELETE', `/signing-secrets/${id}`);
      assert.deepEqual([gone.status, gone.body], [404, { detail: 'Not found.' }], id);
    }
    const audit = await stack.db.knex('audit_events').orderBy('id').select('action', 'target', 'outcome');
    assert.deepEqual(
      audit.map(
        (a) =>
          `${a.action} ${a.target === first.id ? 'first' : a.target === second.id ? 'second' : a.target} ${a.outcome}`,
      ),
      [
        'signing_secret.create first succeeded',
        'signing_secret.create second succeeded',
        'signing_secret.delete second failed',
        'signing_secret.delete config-1 failed',
        'signing_secret.delete first succeeded',
        'signing_secret.delete first failed',
        'signing_secret.delete config-2 failed',
        'signing_secret.delete 6f1c2a7e-0d4b-4c39-9a55-6a0f3e2b9c11 failed',
      ],
    );
  });

  it("the worker's keys note a secret's use at most once a minute", async () => {
    const { id } = (await call('POST', '/signing-secrets')).body;
    const signingKeys = createSigningKeys({
      config: () => config,
      knex: stack.db.knex,
      logger: createLogger('silent'),
    });
    assert.equal((await signingKeys()).length, 2);
    const lastUsed = async () => {
      // The note is written beside the POST, not before it.
      for (let i = 0; i < 50; i++) {
        const [row] = await stack.db.knex('partner_signing_secrets').where({ id }).select('last_used_at');
        if (row.last_used_at) return row.last_used_at as Date;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      return null;
    };
    assert.ok(await lastUsed());
    const listed = (await call('GET', '/signing-secrets')).body.signing_secrets[1];
    assert.equal(listed.last_used_at, (await lastUsed())!.toISOString());
    await stack.db.knex('partner_signing_secrets').where({ id }).update({ last_used_at: null });
    for (let i = 0; i < 5; i++) await signingKeys();
    await new Promise((resolve) => setTimeout(resolve, 200));
    const [row] = await stack.db.knex('partner_signing_secrets').where({ id }).select('last_used_at');
    assert.equal(row.last_used_at, null, 'no second write within the minute');
  });

  it('without payload keys a secret rests in clear; keys status counts it and keys reseal seals it under the newest key', async () => {
    const clearConfig = loadConfig({ PARTNER_SIGNING_SECRETS: CONFIGURED });
    const inClear = await createSigningSecret(stack.db.knex, clearConfig, { actor: 'test' });
    const sealed = (await call('POST', '/signing-secrets')).body;
    const [clearRow] = (await rows()).filter((r) => r.id === inClear.id);
    assert.deepEqual([clearRow.secret_text, clearRow.secret_key_id], [inClear.secret, null]);

    const rotated = loadConfig({ ...ENV, PAYLOAD_ENCRYPTION_KEYS: `${K2} ${K1}` });
    const secrets = (status: Awaited<ReturnType<typeof keysStatus>>) =>
      status.stored.filter((s) => s.kind === 'signing_secret').map((s) => `${s.key_id} ${s.format} ${s.count}`);
    const before = await keysStatus(stack.db.knex, rotated);
    assert.deepEqual(secrets(before), ['k1 v3 1', 'null clear 1']);
    assert.equal(before.to_reseal.signing_secrets, 2);

    // The worker's start names them: one under a key the list leaves out, one in clear.
    const { logger, entries } = capturingLogger();
    await reportDataAtRest(stack.db.knex, loadConfig({ PAYLOAD_ENCRYPTION_KEYS: K2 }), logger);
    assert.deepEqual(
      entries()
        .filter((entry) => entry.msg.includes('signing secret'))
        .map((entry) => entry.msg),
      [
        'signing secrets rest under key ids PAYLOAD_ENCRYPTION_KEYS no longer lists (1 signing secret under k1): ' +
          'deliveries are not signed with them until that key is listed again',
        '1 signing secrets are stored in clear although PAYLOAD_ENCRYPTION_KEYS is set: partner-service keys reseal ' +
          'seals them',
      ],
    );

    const result = await resealAll(stack.db.knex, rotated, { actor: 'test' }, { batchSize: 10 });
    assert.deepEqual([result.key_id, result.signing_secrets, result.unreadable], ['k2', 2, 0]);
    assert.deepEqual(secrets(await keysStatus(stack.db.knex, rotated)), ['k2 v3 2']);
    // Sealed under k2 now, bound to their rows: only k2 is needed to sign with them.
    const onlyK2 = loadConfig({ PAYLOAD_ENCRYPTION_KEYS: K2 });
    const keys = await signingKeysNow(stack.db.knex, onlyK2, dataAtRest(onlyK2));
    assert.deepEqual(keys.keys, [secretKey(inClear.secret), secretKey(sealed.secret)]);
    // Under a key no longer listed, a secret does not sign, and says so.
    const onlyK1 = loadConfig({ PAYLOAD_ENCRYPTION_KEYS: K1 });
    const unreadable = await signingKeysNow(stack.db.knex, onlyK1, dataAtRest(onlyK1));
    assert.deepEqual([unreadable.keys, unreadable.unreadable.map((u) => u.id)], [[], [inClear.id, sealed.id]]);
  });
});
