// A signing-secret rotation through the partner API, on real processes: a dev server, the service's `api` and
// `worker`, the CLI and a loopback partner that verifies with the `standardwebhooks` package. Secret A signs; once B
// is made every POST carries two signatures, each secret verifying it alone; after A's DELETE, one. Neither secret
// is in a log line, an audit row or a workflow history (decoded with the payload codec). `keys reseal` moves the
// stored secret to the new payload key, and processes given only that key still sign with it.
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import type { Payload } from '@temporalio/common';
import { Webhook } from 'standardwebhooks';
import { loadConfig } from '../../lib/config';
import { payloadCodecFor } from '../../temporal/settings';
import jobNew from '../fixtures/events/job-new.json';
import { submitWebhook } from '../support/api';
import { runCli } from '../support/cli';
import { eventually } from '../support/eventually';
import { historyPayloads, historyTexts } from '../support/history';
import type { ReceivedRequest } from '../support/partner-server';
import {
  serviceProcesses,
  startServiceFixtures,
  stopServiceFixtures,
  type StartedServiceFixtures,
} from '../support/service-processes';
import { INTERNAL_TOKEN } from '../support/tokens';
import { insertCompany } from '../listings/support';
import { partnerApp, partnerCall } from './support';

const key = (id: string) => `${id}:${randomBytes(32).toString('base64')}`;
const [K1, K2] = [key('k1'), key('k2')];

describe('drill: a signing-secret rotation through the partner API (api, worker, dev server, CLI)', function () {
  this.timeout(300_000);
  let fixtures: StartedServiceFixtures;
  const taskQueue = `secrets-drill-${randomUUID()}`;
  const env = { INTERNAL_API_TOKEN: INTERNAL_TOKEN, PARTNER_BREAKER_FAILURES: '10000' };
  const underK1 = serviceProcesses(() => fixtures.setting(), { ...env, PAYLOAD_ENCRYPTION_KEYS: K1 });
  const underK2 = serviceProcesses(() => fixtures.setting(), { ...env, PAYLOAD_ENCRYPTION_KEYS: K2 });
  let api: string;
  let headers: Record<string, string>;
  const workflowIds: string[] = [];
  const secrets: string[] = [];

  before(async function () {
    this.timeout(120_000);
    fixtures = await startServiceFixtures('secrets-drill', (_req, res) => res.writeHead(204).end());
    await insertCompany(fixtures.db.knex, 'acme');
    headers = (await partnerApp(fixtures.db.knex, 'drill-app', ['acme'], ['endpoint:manage'])).headers;
    [api] = await Promise.all([underK1.startApi(taskQueue), underK1.startWorker(taskQueue)]);
  });

  after(async function () {
    this.timeout(60_000);
    await underK1.stopAll();
    await stopServiceFixtures(underK2, fixtures ?? {});
  });

  afterEach(async function () {
    if (this.currentTest?.state !== 'failed') return;
    for (const { name, output } of [...underK1.outputs(), ...underK2.outputs()]) {
      console.error(`--- ${name}\n${output.stdout.split('\n').slice(-30).join('\n')}\n${output.stderr.slice(-2000)}`);
    }
  });

  /** One webhook through the whole path; resolves with the request the partner received. */
  const deliver = async (): Promise<ReceivedRequest> => {
    const event = {
      ...structuredClone(jobNew),
      event_id: `secrets-drill-${randomUUID()}`,
      data: { ...structuredClone(jobNew.data), job: { ...jobNew.data.job, id: `job-${randomUUID()}` } },
    };
    const accepted = await submitWebhook(api, INTERNAL_TOKEN, event);
    workflowIds.push(accepted.workflow_id);
    const received = () => fixtures.partner.requests.find((r) => r.headers['webhook-id'] === accepted.webhook_id);
    await eventually(`${accepted.webhook_id} received`, async () => received() !== undefined, 60_000);
    return received()!;
  };
  /** Whether `secret` alone verifies the request, as a partner's verifier does. */
  const verifies = (secret: string, request: ReceivedRequest) => {
    try {
      new Webhook(secret).verify(request.body, request.headers as Record<string, string>);
      return true;
    } catch {
      return false;
    }
  };
  const signatures = (request: ReceivedRequest) => String(request.headers['webhook-signature'] ?? '').split(' ');
  /** Delivers webhooks until one matches `wanted` (the worker reads the secrets every few seconds); returns it. */
  const deliverUntil = async (what: string, wanted: (request: ReceivedRequest) => boolean) => {
    let last: ReceivedRequest | undefined;
    await eventually(what, async () => wanted((last = await deliver())), 60_000);
    return last!;
  };
  const create = async () => {
    const created = await partnerCall(api, headers, 'POST', '/signing-secrets');
    assert.equal(created.status, 201, created.text);
    secrets.push(created.body.secret);
    return created.body as { id: string; secret: string };
  };

  it('rotation: A signs; with B every POST carries two signatures, either secret verifies; after A is deleted, one', async () => {
    const a = await create();
    const signedByA = await deliverUntil('a POST signed with A', (r) => verifies(a.secret, r));
    assert.equal(signatures(signedByA).length, 1);

    const b = await create();
    await deliverUntil('a POST signed with A and B', (r) => signatures(r).length === 2);
    for (const request of [await deliver(), await deliver()]) {
      assert.equal(signatures(request).length, 2, 'the next POSTs carry two signatures');
      assert.ok(signatures(request).every((s) => s.startsWith('v1,')));
      assert.ok(verifies(a.secret, request), 'A alone verifies');
      assert.ok(verifies(b.secret, request), 'B alone verifies');
    }
    const listed = await partnerCall(api, headers, 'GET', '/signing-secrets');
    assert.deepEqual(
      listed.body.signing_secrets.map((s: { id: string; source: string }) => `${s.id} ${s.source}`),
      [`${a.id} api`, `${b.id} api`],
    );
    assert.ok(listed.body.signing_secrets[0].expires_at, "A's overlap has an end");
    assert.ok(listed.body.signing_secrets[0].last_used_at, 'A signed');

    assert.equal((await partnerCall(api, headers, 'DELETE', `/signing-secrets/${b.id}`)).status, 409);
    assert.equal((await partnerCall(api, headers, 'DELETE', `/signing-secrets/${a.id}`)).status, 204);
    const afterDelete = await deliverUntil('a POST with one signature', (r) => signatures(r).length === 1);
    assert.ok(verifies(b.secret, afterDelete), 'B verifies');
    assert.ok(!verifies(a.secret, afterDelete), 'A no longer does');
    assert.equal(signatures(await deliver()).length, 1);
  });

  it('no secret in a log line of the api or the worker, an audit row, or a workflow history (decoded)', async () => {
    const forms = secrets.flatMap((secret) => [secret, secret.slice('whsec_'.length)]);
    const found = (texts: readonly string[]) => forms.filter((form) => texts.some((text) => text.includes(form)));
    const logs = underK1.outputs().flatMap(({ output }) => [output.stdout, output.stderr]);
    assert.ok(logs.join('').includes('webhook delivered'), 'the probe reads the logs');
    assert.deepEqual(found(logs), []);

    const audit = await fixtures.db.knex('audit_events').select('*');
    assert.deepEqual(
      audit.filter((row) => row.action.startsWith('signing_secret.')).map((row) => `${row.action} ${row.outcome}`),
      [
        'signing_secret.create succeeded',
        'signing_secret.create succeeded',
        'signing_secret.delete failed',
        'signing_secret.delete succeeded',
      ],
    );
    assert.deepEqual(found(audit.map((row) => JSON.stringify(row))), []);

    const connection = await Connection.connect({ address: `127.0.0.1:${fixtures.serverPort}` });
    try {
      const client = new Client({ connection });
      const codec = payloadCodecFor(loadConfig({ PAYLOAD_ENCRYPTION_KEYS: K1 }))!;
      let decodedPayloads = 0;
      for (const workflowId of workflowIds) {
        const history = await client.workflow.getHandle(workflowId).fetchHistory();
        const decoded = await codec.decode(historyPayloads<Payload>(history).map(({ payload }) => payload));
        decodedPayloads += decoded.length;
        const texts = [...historyTexts(history), ...decoded.map((p) => Buffer.from(p.data ?? []).toString('utf8'))];
        assert.deepEqual(found(texts), [], workflowId);
      }
      assert.ok(decodedPayloads >= workflowIds.length * 2, `${decodedPayloads} payloads decoded`);
    } finally {
      await connection.close();
    }
  });

  it('keys reseal moves the stored secret to k2; api and worker given k2 alone still sign with it', async () => {
    const stored = () =>
      fixtures.db
        .knex('partner_signing_secrets')
        .whereNotNull('secret_sealed')
        .select('id', 'secret_key_id', 'secret_sealed');
    const [before] = await stored();
    assert.equal(before.secret_key_id, 'v3:k1');
    const reseal = await runCli(
      ['keys', 'reseal'],
      { ...underK1.common(taskQueue), PAYLOAD_ENCRYPTION_KEYS: `${K2} ${K1}` },
      fixtures.work,
    );
    assert.equal(reseal.code, 0, reseal.stderr);
    assert.equal(JSON.parse(reseal.stdout).signing_secrets, 1);
    const after = await stored();
    assert.deepEqual(
      after.map((row) => [row.id, row.secret_key_id]),
      [[before.id, 'v3:k2']],
    );
    assert.ok(!after[0].secret_sealed.equals(before.secret_sealed));

    await underK1.terminateAll();
    [api] = await Promise.all([underK2.startApi(taskQueue), underK2.startWorker(taskQueue)]);
    const request = await deliver();
    assert.equal(signatures(request).length, 1);
    assert.ok(verifies(secrets[1], request), 'B, resealed under k2, still signs');
  });
});
