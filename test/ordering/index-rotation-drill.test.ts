// The subject index key rotated under a waiting head (issue 56, point 3), on real `partner-service api` and
// `worker` processes, a dev server and the compiled CLI. An entity's head fails with 503 and waits for its retry
// under SUBJECT_INDEX_KEYS="i1"; every process is replaced by one with "i2 i1"; the entity's next webhook queues
// behind the head in the lane made under i1 (nothing of it reaches the partner), `ordering status` and `ordering
// skip` find that lane (skip refuses the head as not blocked, naming it, where an unknown key is not found), and
// once the partner answers, the head goes first and the next webhook second, numbered 2.
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import candidateNew from '../fixtures/events/candidate-new.json';
import { submitWebhook } from '../support/api';
import { runCli } from '../support/cli';
import { eventually } from '../support/eventually';
import {
  serviceProcesses,
  startServiceFixtures,
  stopServiceFixtures,
  type StartedServiceFixtures,
} from '../support/service-processes';
import { INTERNAL_TOKEN } from '../support/tokens';

const i1 = `i1:${randomBytes(32).toString('base64')}`;
const i2 = `i2:${randomBytes(32).toString('base64')}`;

describe('drill: SUBJECT_INDEX_KEYS rotated while an entity head waits for its retry', function () {
  this.timeout(240_000);
  let fixtures: StartedServiceFixtures;
  const queue = `index-rotation-${randomUUID()}`;
  let answering = 503;
  const arrivals: Array<{ webhookId: string; status: number; sequence: string | undefined; key: string | undefined }> =
    [];
  const payloadKeys = `p1:${randomBytes(32).toString('base64')}`;
  const processes = serviceProcesses(() => fixtures.setting(), {
    INTERNAL_API_TOKEN: INTERNAL_TOKEN,
    PAYLOAD_ENCRYPTION_KEYS: payloadKeys,
  });

  before(async function () {
    this.timeout(90_000);
    fixtures = await startServiceFixtures('index-rotation-drill', (req, res) => {
      const header = (name: string) => (req.headers[name] === undefined ? undefined : String(req.headers[name]));
      const webhookId = String(req.headers['webhook-id']);
      arrivals.push({
        webhookId,
        status: answering,
        sequence: header('webhook-sequence'),
        key: header('webhook-ordering-key'),
      });
      res.writeHead(answering).end();
    });
  });
  after(async function () {
    this.timeout(60_000);
    await stopServiceFixtures(processes, fixtures ?? {});
  });

  const candidate = `c-rotate-${randomUUID()}`;
  const key = `candidate:${candidate}`;
  const eventOf = () => {
    const event = structuredClone(candidateNew) as typeof candidateNew & { event_id: string };
    event.event_id = `rotate-${randomUUID()}`;
    event.data.candidate.id = candidate;
    return event;
  };
  const post = async (api: string) => {
    return (await submitWebhook(api, INTERNAL_TOKEN, eventOf())).webhook_id;
  };
  const cli = (args: string[]) => runCli(args, { ...processes.common(queue), SUBJECT_INDEX_KEYS: `${i2} ${i1}` });

  it('keeps the lane: the next webhook waits for the head, ordering skip finds the lane, and the head goes first', async () => {
    await processes.startWorker(queue, { SUBJECT_INDEX_KEYS: i1 });
    const before = await processes.startApi(queue, { SUBJECT_INDEX_KEYS: i1 });
    const head = await post(before);
    await eventually(
      'the head answered 503, waiting for its retry',
      async () => arrivals.some((a) => a.webhookId === head && a.status === 503),
      30_000,
    );

    // The rotation's first step on every process at once: i2 first, i1 still listed.
    await processes.stopAll();
    await processes.startWorker(queue, { SUBJECT_INDEX_KEYS: `${i2} ${i1}` });
    const after = await processes.startApi(queue, { SUBJECT_INDEX_KEYS: `${i2} ${i1}` });
    const next = await post(after);

    const { rows } = await fixtures.db.knex.raw(
      `SELECT p.webhook_id, p.lane_id, p.seq::int AS seq, p.settled_at IS NULL AS open, l.index_key_id
         FROM ordering_places p JOIN ordering_lanes l ON l.id = p.lane_id WHERE p.webhook_id = ANY(?) ORDER BY p.seq`,
      [[head, next]],
    );
    type Place = { webhook_id: string; seq: number; open: boolean; index_key_id: string };
    assert.deepEqual(
      rows.map((r: Place) => [r.webhook_id, r.seq, r.open, r.index_key_id]),
      [
        [head, 1, true, 'i1'],
        [next, 2, true, 'i1'],
      ],
    );
    assert.equal(rows[0].lane_id, rows[1].lane_id, 'one lane');
    await eventually(
      'the next webhook queued behind the head',
      async () => {
        const place = await fixtures.db.knex('ordering_places').where({ webhook_id: next }).first('waiting_since');
        return place?.waiting_since !== null && place?.waiting_since !== undefined;
      },
      30_000,
    );
    await delay(1000);
    assert.ok(!arrivals.some((a) => a.webhookId === next), 'nothing of the next webhook reached the partner');

    const status = await cli(['ordering', 'status']);
    assert.equal(status.code, 0, status.stderr);
    type KeyRow = { key: string; head: { webhook_id: string; sequence: number }; queued: number };
    const { keys } = JSON.parse(status.stdout) as { keys: KeyRow[] };
    const ours = keys.find((k) => k.key === key);
    assert.deepEqual([ours?.head.webhook_id, ours?.head.sequence, ours?.queued], [head, 1, 1]);
    const skip = await cli(['ordering', 'skip', key]);
    assert.equal(skip.code, 1);
    assert.match(
      skip.stderr,
      new RegExp(`The key is not blocked: its head, webhook ${head}, has not failed finally\\.`),
    );
    const unknown = await cli(['ordering', 'skip', `candidate:never-${randomUUID()}`]);
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /^No lane for this ordering key: /);

    // The partner answers again; the head's retry now goes first, then the next webhook.
    answering = 200;
    // retry-now answers 409 while an attempt is being sent (the 10 s retry): that attempt gets the 200 instead.
    const headers = { authorization: `Bearer ${INTERNAL_TOKEN}` };
    await eventually(
      'the head retried now, or its attempt in flight answered',
      async () => {
        if (arrivals.some((a) => a.webhookId === head && a.status === 200)) return true;
        return (
          (await fetch(`${after}/internal/v1/webhooks/${head}/retry-now`, { method: 'POST', headers })).status === 202
        );
      },
      30_000,
    );
    await eventually('both delivered', async () => arrivals.filter((a) => a.status === 200).length === 2, 60_000);
    const delivered = arrivals.filter((a) => a.status === 200).map((a) => [a.webhookId, a.sequence, a.key]);
    assert.deepEqual(delivered, [
      [head, '1', key],
      [next, '2', key],
    ]);
    assert.ok(
      arrivals.filter((a) => a.webhookId === head).every((a, i, all) => i === all.length - 1 || a.status === 503),
    );
  });
});
