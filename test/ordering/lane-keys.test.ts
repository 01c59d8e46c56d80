// Ordering lanes' keys at rest, on real PostgreSQL and a real dev server with the service's worker and API: `keys
// status` counts them by key and format, `keys reseal` reseals them (in clear ones too), the worker's start-up
// report names those under unlisted keys; and a lane whose key no listed key opens never stops its key: the next
// webhook rebuilds the key from its own and is delivered, GET /internal/v1/ordering answers 200, a redelivery 202.
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import jobNew from '../fixtures/events/job-new.json';
import { dataAtRest, openText, sealText } from '../../lib/at-rest';
import { loadConfig } from '../../lib/config';
import { laneDigest, laneKeyBinding } from '../../store/ordering/lanes';
import { indexKeysOf } from '../../store/personal-data/subject-index-keys';
import { keysStatus, resealAll } from '../../application/personal-data/key-rotation';
import { reportDataAtRest } from '../../application/personal-data/at-rest-report';
import { capturingLogger } from '../support/capturing-logger';
import { eventually } from '../support/eventually';
import { startWebhookStack, type WebhookStack } from '../support/webhook-stack';
import { INTERNAL_TOKEN } from '../support/tokens';
import { internalCall } from '../support/api';

const [K0, K1, K2] = ['k0', 'k1', 'k2'].map((id) => ({ id, key: randomBytes(32) }));
const setting = (...keys: Array<typeof K1>) => keys.map(({ id, key }) => `${id}:${key.toString('base64')}`).join(' ');
const atRestOf = (...keys: Array<typeof K1>) => dataAtRest(loadConfig({ PAYLOAD_ENCRYPTION_KEYS: setting(...keys) }));
const UNDER_K0 = atRestOf(K0);

interface LaneRow {
  id: string;
  key_digest: Buffer;
  key_text: string | null;
  key_sealed: Buffer | null;
  key_key_id: string | null;
}

describe('ordering lane keys at rest: counted, resealed, and rebuilt when no listed key opens them', function () {
  this.timeout(180_000);
  let stack: WebhookStack;
  /** The partner's answer by webhook-id. */
  let answerFor: (webhookId: string) => number = () => 204;

  before(async () => {
    stack = await startWebhookStack({
      env: {
        INTERNAL_API_TOKEN: INTERNAL_TOKEN,
        WEBHOOK_ORDERING: 'entity',
        PAYLOAD_ENCRYPTION_KEYS: setting(K1),
        PARTNER_BREAKER_FAILURES: '10000',
      },
      compressTimers: true,
      partnerHandler: (req, res) => res.writeHead(answerFor(String(req.headers['webhook-id']))).end(),
    });
  });

  after(() => stack?.close());

  const call = (method: string, path: string, body?: unknown) =>
    internalCall(`${stack.api.url}/internal/v1${path}`, INTERNAL_TOKEN, method, body);
  const jobEvent = (jobId: string, action = 'update') => ({
    ...structuredClone(jobNew),
    action,
    event_id: `lane-${randomUUID()}`,
    data: { ...structuredClone(jobNew.data), job: { ...jobNew.data.job, id: jobId } },
  });
  const digestOf = async (key: string) =>
    laneDigest((await indexKeysOf(stack.db.knex, dataAtRest(stack.config))).writeWith, key);
  const laneOf = async (key: string): Promise<LaneRow> =>
    (
      await stack.db.knex.raw(
        'SELECT id::text, key_digest, key_text, key_sealed, key_key_id FROM ordering_lanes WHERE key_digest = ?',
        [await digestOf(key)],
      )
    ).rows[0];
  /** Leaves a lane's key sealed under k0, which the service does not list: a rotation whose reseal never reached it. */
  const sealUnderK0 = async (key: string) => {
    const digest = await digestOf(key);
    const sealed = sealText(UNDER_K0, key, laneKeyBinding(digest));
    await stack.db.knex.raw(
      'UPDATE ordering_lanes SET key_text = NULL, key_sealed = ?, key_key_id = ? WHERE key_digest = ?',
      [sealed.sealed, sealed.keyId, digest],
    );
  };
  const delivered = (webhookId: string) =>
    eventually(
      `${webhookId} delivered`,
      async () => (await stack.db.knex('webhook_events').where({ id: webhookId }).first()).status === 'delivered',
      60_000,
    );
  const requestsOf = (webhookId: string) => stack.partner.requests.filter((r) => r.headers['webhook-id'] === webhookId);

  describe('keys status, keys reseal and the start-up report', () => {
    const sealedKeys = [`job:${randomUUID()}`, `job:${randomUUID()}`];
    const clearKey = `job:clear-${randomUUID()}`;
    const lostKey = `job:lost-${randomUUID()}`;
    const laneKeys = <T extends { kind: string }>(rows: T[]) => rows.filter((row) => row.kind === 'lane_key');

    before(async () => {
      // Two lanes made by the service under k1; one written before keys (in clear); one under k0, no longer listed.
      for (const key of [...sealedKeys, lostKey]) {
        const accepted = await call('POST', '/webhooks', jobEvent(key.slice('job:'.length), 'new'));
        assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
        await delivered(String(accepted.body.webhook_id));
      }
      await sealUnderK0(lostKey);
      await stack.db.knex.raw('INSERT INTO ordering_lanes (key_digest, key_text, last_seq) VALUES (?, ?, 0)', [
        await digestOf(clearKey),
        clearKey,
      ]);
    });

    it('keys status counts lane keys by key and format, names those under unlisted keys, and counts them to reseal', async () => {
      const status = await keysStatus(stack.db.knex, loadConfig({ PAYLOAD_ENCRYPTION_KEYS: setting(K2, K1) }));
      assert.deepEqual(laneKeys(status.stored), [
        { kind: 'lane_key', key_id: 'k0', format: 'v3', listed: false, count: 1 },
        { kind: 'lane_key', key_id: 'k1', format: 'v3', listed: true, count: 2 },
        { kind: 'lane_key', key_id: null, format: 'clear', listed: null, count: 1 },
      ]);
      assert.deepEqual(status.under_unlisted_keys, ['1 ordering lane key under k0']);
      assert.equal(status.to_reseal.lane_keys, 4);
    });

    it('the worker start-up report names the lane keys under unlisted keys and counts those in clear', async () => {
      const { logger, entries } = capturingLogger();
      await reportDataAtRest(stack.db.knex, loadConfig({ PAYLOAD_ENCRYPTION_KEYS: setting(K2, K1) }), logger);
      const lines = entries()
        .filter((entry) => entry.msg.includes('ordering lane key'))
        .map((entry) => entry.msg);
      assert.deepEqual(lines, [
        "ordering lane keys rest under key ids PAYLOAD_ENCRYPTION_KEYS no longer lists (1 ordering lane key under k0): the next webhook of each such key rebuilds its lane's key and is delivered; list the key again and run partner-service keys reseal to reseal them at once",
        '1 ordering lane keys are stored in clear although PAYLOAD_ENCRYPTION_KEYS is set: partner-service keys reseal seals them',
      ]);
    });

    it('keys reseal seals every lane key under k2, the one in clear too, and leaves the one no listed key opens', async () => {
      const config = loadConfig({ PAYLOAD_ENCRYPTION_KEYS: setting(K2, K1) });
      const result = await resealAll(stack.db.knex, config, { actor: 'test:lane-keys' }, { batchSize: 2 });
      assert.deepEqual([result.key_id, result.lane_keys, result.unreadable], ['k2', 3, 1]);
      const onlyK2 = atRestOf(K2);
      for (const key of [...sealedKeys, clearKey]) {
        const lane = await laneOf(key);
        assert.deepEqual([lane.key_text, lane.key_key_id], [null, 'v3:k2'], key);
        assert.equal(
          openText(
            onlyK2,
            { clear: null, sealed: lane.key_sealed, keyId: lane.key_key_id },
            laneKeyBinding(lane.key_digest),
          ),
          key,
        );
      }
      assert.equal((await laneOf(lostKey)).key_key_id, 'v3:k0');
      const status = await keysStatus(stack.db.knex, config);
      assert.deepEqual(
        laneKeys(status.stored).map((row) => `${row.key_id} ${row.count}`),
        ['k0 1', 'k2 3'],
      );
      assert.deepEqual(status.to_reseal, {
        bodies: status.to_reseal.bodies,
        excerpts: status.to_reseal.excerpts,
        lane_keys: 1,
        signing_secrets: 0,
      });
    });
  });

  describe('a lane whose key no listed key opens', () => {
    const jobId = `j-${randomUUID()}`;
    const key = `job:${jobId}`;
    let firstId: string;

    before(async () => {
      const first = await call('POST', '/webhooks', jobEvent(jobId, 'new'));
      firstId = String(first.body.webhook_id);
      await delivered(firstId);
      await sealUnderK0(key);
    });

    it("its next webhook takes its turn: the key is rebuilt from the webhook's own, resealed under k1, and the webhook delivered in sequence", async () => {
      const second = await call('POST', '/webhooks', jobEvent(jobId));
      assert.equal(second.status, 202);
      const secondId = String(second.body.webhook_id);
      await delivered(secondId);
      const [sent] = requestsOf(secondId);
      assert.deepEqual([sent.headers['webhook-ordering-key'], sent.headers['webhook-sequence']], [key, '2']);
      const lane = await laneOf(key);
      assert.equal(lane.key_key_id, 'v3:k1');
      assert.equal(
        openText(
          atRestOf(K1),
          { clear: null, sealed: lane.key_sealed, keyId: lane.key_key_id },
          laneKeyBinding(lane.key_digest),
        ),
        key,
      );
    });

    it('a redelivery of an original of that lane is accepted (202) and sent without the ordering headers', async () => {
      await sealUnderK0(key);
      const redelivery = await call('POST', `/webhooks/${firstId}/redeliver`);
      assert.equal(redelivery.status, 202, JSON.stringify(redelivery.body));
      await delivered(String(redelivery.body.webhook_id));
      const sent = requestsOf(firstId);
      assert.equal(sent.length, 2, 'the original and its redelivery');
      assert.deepEqual([sent[0].headers['webhook-ordering-key'], sent[0].headers['webhook-sequence']], [key, '1']);
      assert.deepEqual(
        [sent[1].headers['webhook-ordering-key'], sent[1].headers['webhook-sequence']],
        [undefined, undefined],
      );
    });

    it('GET /internal/v1/ordering answers 200: the key null, and why, naming lane keys', async () => {
      const third = await call('POST', '/webhooks', jobEvent(jobId));
      const thirdId = String(third.body.webhook_id);
      answerFor = (webhookId) => (webhookId === thirdId ? 503 : 204);
      await eventually('the third webhook attempted', async () => requestsOf(thirdId).length > 0, 30_000);
      await sealUnderK0(key);
      const status = await call('GET', '/ordering');
      assert.equal(status.status, 200);
      const mine = (status.body.keys as Array<Record<string, unknown>>).find(
        (k) => (k.head as { webhook_id: string }).webhook_id === thirdId,
      )!;
      assert.deepEqual(
        [mine.key, mine.key_unreadable],
        [
          null,
          'an ordering lane key is sealed with key id "k0", which PAYLOAD_ENCRYPTION_KEYS no longer lists: list that key again to read it; the next webhook of the key rebuilds it',
        ],
      );
      await stack.client.workflow.getHandle(String(third.body.workflow_id)).cancel();
      answerFor = () => 204;
    });
  });
});
