// The payload-key runbook with ordered entities, on real processes: a dev server, the service's `api` and `worker`
// and the CLI as child processes, one PostgreSQL. Entity A's lane begins under k1; the runbook lists k2 first,
// runs `keys reseal`, removes k1 and restarts, and A's next webhook is delivered in sequence. Entity B's lane is
// written under k1 after the reseal (a process not yet restarted), so it is still under k1 when k1 is removed:
// `keys status` and the worker's start-up report name it, and B's next webhook is delivered all the same (its
// lane's key rebuilt). Then no lane key rests under k1 and GET /internal/v1/ordering answers 200.
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import jobNew from '../fixtures/events/job-new.json';
import { runCli } from '../support/cli';
import { eventually } from '../support/eventually';
import {
  serviceProcesses,
  startServiceFixtures,
  stopServiceFixtures,
  type StartedServiceFixtures,
} from '../support/service-processes';
import { submitWebhook } from '../support/api';
import { INTERNAL_TOKEN } from '../support/tokens';

const [K1, K2] = ['k1', 'k2'].map((id) => ({ id, key: randomBytes(32) }));
const setting = (...keys: Array<typeof K1>) => keys.map(({ id, key }) => `${id}:${key.toString('base64')}`).join(' ');

interface KeysStatus {
  stored: Array<{ kind: string; key_id: string | null; format: string; listed: boolean | null; count: number }>;
  under_unlisted_keys: string[];
  to_reseal: { bodies: number; excerpts: number; lane_keys: number };
}

describe('drill: the payload-key runbook with ordered entities (api, worker, dev server, CLI)', function () {
  this.timeout(300_000);
  let fixtures: StartedServiceFixtures;
  const taskQueue = `lane-drill-${randomUUID()}`;
  const env = { INTERNAL_API_TOKEN: INTERNAL_TOKEN, WEBHOOK_ORDERING: 'entity', PARTNER_BREAKER_FAILURES: '10000' };
  const withKeys = (keys: string) =>
    serviceProcesses(() => fixtures.setting(), { ...env, PAYLOAD_ENCRYPTION_KEYS: keys });
  const onlyK1 = withKeys(setting(K1));
  const both = withKeys(setting(K2, K1));
  const onlyK2 = withKeys(setting(K2));
  const [entityA, entityB] = [`a-${randomUUID()}`, `b-${randomUUID()}`];
  /** Webhook ids the partner fails (503) while they are listed. */
  const failing = new Set<string>();
  const tries = new Map<string, number>();
  let b2: string;

  before(async function () {
    this.timeout(120_000);
    fixtures = await startServiceFixtures('lane-drill', (req, res) => {
      const webhookId = String(req.headers['webhook-id']);
      const n = (tries.get(webhookId) ?? 0) + 1;
      tries.set(webhookId, n);
      res.writeHead(failing.has(webhookId) ? 503 : 204).end();
    });
  });

  after(async function () {
    this.timeout(60_000);
    await Promise.all([onlyK1.stopAll(), both.stopAll()]);
    await stopServiceFixtures(onlyK2, fixtures ?? {});
  });

  // A failure prints what the processes said and the rows of B's head: a timing failure under load is then readable.
  afterEach(async function () {
    if (this.currentTest?.state !== 'failed') return;
    for (const { name, output } of [onlyK1, both, onlyK2].flatMap((processes) => processes.outputs())) {
      console.error(
        `--- ${name}\n${output.stdout.split('\n').slice(-40).join('\n')}\n${output.stderr.split('\n').slice(-20).join('\n')}`,
      );
    }
    if (b2) {
      const rows = await fixtures.db
        .knex('webhook_attempts')
        .where({ webhook_id: b2 })
        .select('attempt', 'started_at', 'http_status', 'error_class', 'recorded_at');
      const webhook = await fixtures.db
        .knex('webhook_events')
        .where({ id: b2 })
        .first('status', 'claimed_attempt', 'held_since');
      console.error('B2', JSON.stringify({ webhook, rows }));
    }
  });

  const post = async (api: string, jobId: string, action: string) => {
    const event = {
      ...structuredClone(jobNew),
      action,
      event_id: `drill-${randomUUID()}`,
      data: { ...structuredClone(jobNew.data), job: { ...jobNew.data.job, id: jobId } },
    };
    return (await submitWebhook(api, INTERNAL_TOKEN, event)).webhook_id;
  };
  const statusOf = async (webhookId: string) =>
    (await fixtures.db.knex('webhook_events').where({ id: webhookId }).first('status'))?.status;
  const delivered = (webhookId: string) =>
    eventually(`${webhookId} delivered`, async () => (await statusOf(webhookId)) === 'delivered', 90_000);
  /** The ordering headers of the partner's last POST of a webhook. */
  const sentWith = (webhookId: string) => {
    const last = fixtures.partner.requests.filter((r) => r.headers['webhook-id'] === webhookId).at(-1)!;
    return [last.headers['webhook-ordering-key'], last.headers['webhook-sequence']];
  };
  const keysStatus = async (keys: string): Promise<KeysStatus> => {
    const result = await runCli(
      ['keys', 'status'],
      { ...onlyK2.common(taskQueue), PAYLOAD_ENCRYPTION_KEYS: keys },
      fixtures.work,
    );
    assert.equal(result.code, 0, result.stderr);
    return JSON.parse(result.stdout) as KeysStatus;
  };
  const operate = (api: string, method: string, path: string) =>
    fetch(`${api}/internal/v1${path}`, { method, headers: { authorization: `Bearer ${INTERNAL_TOKEN}` } });
  /**
   * An operator's retry-now, made once the webhook waits for its retry (refused while an attempt is being made). On
   * a slow machine the 10 s timer may make that attempt first: the webhook is then delivered and no retry is needed.
   */
  const retryNow = (api: string, webhookId: string) =>
    eventually(
      `${webhookId} retried now or delivered by its timer`,
      async () =>
        (await operate(api, 'POST', `/webhooks/${webhookId}/retry-now`)).status === 202 ||
        (await statusOf(webhookId)) === 'delivered',
      60_000,
    );
  const ordering = async (api: string) => {
    const response = await operate(api, 'GET', '/ordering');
    type Key = { key: string | null; key_unreadable?: string; head: { webhook_id: string; sequence: number } };
    return { status: response.status, body: (await response.json()) as { keys: Key[] } };
  };
  const laneKeys = (status: KeysStatus) =>
    status.stored.filter((row) => row.kind === 'lane_key').map((row) => `${row.key_id} ${row.format} ${row.count}`);

  it("with k1: entity A's first webhook fails once, is retried and delivered; its lane rests under k1", async () => {
    const api = await onlyK1.startApi(taskQueue);
    await onlyK1.startWorker(taskQueue);
    const a1 = await post(api, entityA, 'new');
    failing.add(a1);
    await eventually('A1 attempted', async () => (tries.get(a1) ?? 0) >= 1, 60_000);
    failing.delete(a1);
    await retryNow(api, a1);
    await delivered(a1);
    assert.deepEqual(sentWith(a1), [`job:${entityA}`, '1']);
    await onlyK1.terminateAll();
    assert.deepEqual(laneKeys(await keysStatus(setting(K1))), ['k1 v3 1']);
  });

  it("the runbook: k2 listed first, keys reseal moves A's lane key to k2; a process still on k1 then writes B's lane under k1", async () => {
    const api = await both.startApi(taskQueue);
    await both.startWorker(taskQueue);
    const reseal = await runCli(['keys', 'reseal'], both.common(taskQueue), fixtures.work);
    assert.equal(reseal.code, 0, reseal.stderr);
    const resealed = JSON.parse(reseal.stdout) as { key_id: string; lane_keys: number; unreadable: number };
    assert.deepEqual([resealed.key_id, resealed.lane_keys, resealed.unreadable], ['k2', 1, 0]);
    assert.match(
      reseal.stderr,
      /keys reseal: batch \d+: \d+ bodies, \d+ response excerpts and 1 ordering lane keys resealed, 0 unreadable/,
    );
    // An API process not yet restarted with the new list accepts B's first webhook: its lane is sealed under k1.
    const straggler = await onlyK1.startApi(taskQueue);
    const b1 = await post(straggler, entityB, 'new');
    await delivered(b1);
    assert.deepEqual(sentWith(b1), [`job:${entityB}`, '1']);
    // B's next webhook is its lane's head, failing and waiting for its retry, when k1 goes.
    b2 = await post(api, entityB, 'update');
    failing.add(b2);
    await eventually('B2 attempted', async () => (tries.get(b2) ?? 0) >= 1, 60_000);
    const status = await keysStatus(setting(K2, K1));
    assert.deepEqual(laneKeys(status), ['k1 v3 1', 'k2 v3 1']);
    assert.equal(status.to_reseal.lane_keys, 1);
    await Promise.all([both.terminateAll(), onlyK1.terminateAll()]);
  });

  it("k1 removed: status and the worker's start name B's lane key under k1, GET /internal/v1/ordering answers 200, and every webhook is delivered in sequence", async () => {
    const before = await keysStatus(setting(K2));
    assert.ok(
      before.under_unlisted_keys.includes('1 ordering lane key under k1'),
      JSON.stringify(before.under_unlisted_keys),
    );
    const api = await onlyK2.startApi(taskQueue);
    // B's head waits with its lane's key unreadable: the operator's view answers, the key null and why. No worker
    // runs yet, so no attempt can rebuild the key before this look.
    const waiting = await ordering(api);
    assert.equal(waiting.status, 200);
    const keyB = waiting.body.keys.find((k) => k.head.webhook_id === b2)!;
    assert.deepEqual([keyB.key, keyB.head.sequence], [null, 2]);
    assert.match(
      keyB.key_unreadable!,
      /^an ordering lane key is sealed with key id "k1", which PAYLOAD_ENCRYPTION_KEYS no longer lists/,
    );

    failing.delete(b2);
    const worker = await onlyK2.startWorker(taskQueue);
    await eventually(
      'the start-up report',
      async () => worker.output.stdout.includes('ordering lane keys rest under key ids'),
      30_000,
    );
    const line = worker.output.stdout.split('\n').find((l) => l.includes('ordering lane keys rest under key ids'))!;
    assert.match(
      line,
      /no longer lists \(1 ordering lane key under k1\): the next webhook of each such key rebuilds its lane's key and is delivered/,
    );
    await retryNow(api, b2);
    await delivered(b2);
    assert.deepEqual(sentWith(b2), [`job:${entityB}`, '2']);

    const a2 = await post(api, entityA, 'update');
    const b3 = await post(api, entityB, 'update');
    await Promise.all([delivered(a2), delivered(b3)]);
    assert.deepEqual(sentWith(a2), [`job:${entityA}`, '2']);
    assert.deepEqual(sentWith(b3), [`job:${entityB}`, '3']);

    const after = await keysStatus(setting(K2));
    assert.deepEqual(laneKeys(after), ['k2 v3 2'], 'no lane key under k1');
    assert.ok(
      !after.under_unlisted_keys.some((named) => named.includes('lane key')),
      JSON.stringify(after.under_unlisted_keys),
    );
    assert.deepEqual(await ordering(api), { status: 200, body: { keys: [] } });
  });
});
