// Ordering lanes after erasures, on real `partner-service api` and `worker` processes, a dev server and the
// compiled CLI, with the service's keys (lane keys sealed, the subject index keyed) (issue 56, point 2). Three
// people: one erased, written to again and erased again; one erased in two parts (by e-mail while another webhook
// of their key waits for a retry, then by candidate id); one whose only webhook naming their address the log
// purge (`retention run`) took before the erasure by e-mail. After each `completed`, plain SQL over every column
// of ordering_lanes, ordering_places and ordering_lane_subjects finds no key, no digest, no sealed form seen
// before, and no subject key of theirs.
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import candidateNew from '../fixtures/events/candidate-new.json';
import { webhookIds } from '../../application/ingestion/ids';
import { laneDigest } from '../../store/ordering/lanes';
import { subjectKey } from '../../lib/subject-index';
import { postWebhook } from '../support/api';
import { runCli } from '../support/cli';
import { eventually } from '../support/eventually';
import {
  serviceProcesses,
  startServiceFixtures,
  stopServiceFixtures,
  type StartedServiceFixtures,
} from '../support/service-processes';
import { INTERNAL_TOKEN } from '../support/tokens';

const INDEX_KEY = randomBytes(32);
const KEYS = {
  PAYLOAD_ENCRYPTION_KEYS: `drill:${randomBytes(32).toString('base64')}`,
  SUBJECT_INDEX_KEYS: `idx:${INDEX_KEY.toString('base64')}`,
};

describe('drill: no lane keeps an erased person, after an erasure, two partial erasures and the log purge', function () {
  this.timeout(600_000);
  let fixtures: StartedServiceFixtures;
  let api: string;
  const queue = `lane-erasure-${randomUUID()}`;
  /** Webhook ids the partner answers 503 (a retry waits); the others 200. */
  const failing = new Set<string>();
  const processes = serviceProcesses(() => fixtures.setting(), { INTERNAL_API_TOKEN: INTERNAL_TOKEN, ...KEYS });

  before(async function () {
    this.timeout(120_000);
    fixtures = await startServiceFixtures('lane-erasure-drill', (req, res) => {
      res.writeHead(failing.has(String(req.headers['webhook-id'])) ? 503 : 200).end();
    });
    await processes.startWorker(queue, { PARTNER_MAX_PER_SECOND: '1000' });
    api = await processes.startApi(queue);
  });
  after(async function () {
    this.timeout(60_000);
    await stopServiceFixtures(processes, fixtures ?? {});
  });

  const authorised = { authorization: `Bearer ${INTERNAL_TOKEN}` };
  /** Posts a webhook of `candidate` whose body names `email` (answered 503 at every attempt when `failing`); its webhook id. */
  const post = async (candidate: string, email: string, { failing: fails = false } = {}) => {
    const event = structuredClone(candidateNew) as typeof candidateNew & { event_id: string };
    event.event_id = `lane-drill-${randomUUID()}`;
    Object.assign(event.data.candidate, { id: candidate, email });
    if (fails) failing.add(webhookIds({ event_type: 'candidate', action: 'new', event_id: event.event_id }).webhookId);
    const response = await postWebhook(api, INTERNAL_TOKEN, event);
    assert.equal(response.status, 202);
    return String(((await response.json()) as { webhook_id: string }).webhook_id);
  };
  const statusOf = async (webhookId: string) =>
    (await fixtures.db.knex('webhook_events').where({ id: webhookId }).first('status')).status as string;
  const delivered = (webhookId: string) =>
    eventually(`${webhookId} delivered`, async () => (await statusOf(webhookId)) === 'delivered', 60_000);
  /** Requests an erasure through the API and waits for `completed`; its webhooks found. */
  const erase = async (subject: Record<string, string>) => {
    const headers = { ...authorised, 'content-type': 'application/json' };
    const requested = await fetch(`${api}/internal/v1/erasures`, {
      method: 'POST',
      headers,
      body: JSON.stringify(subject),
    });
    assert.equal(requested.status, 202);
    const { erasure_id: erasureId } = (await requested.json()) as { erasure_id: string };
    let view: { status?: string; webhooks_found?: number } = {};
    await eventually(
      'the erasure completed',
      async () => {
        view = (await (
          await fetch(`${api}/internal/v1/erasures/${erasureId}`, { headers: authorised })
        ).json()) as typeof view;
        return view.status === 'completed';
      },
      240_000,
    );
    return view.webhooks_found;
  };
  const sealedOf = async (webhookId: string): Promise<string> => {
    const { rows } = await fixtures.db.knex.raw(
      `SELECT encode(l.key_sealed, 'hex') AS sealed, l.key_text FROM ordering_lanes l JOIN ordering_places p ON p.lane_id = l.id WHERE p.webhook_id = ?`,
      [webhookId],
    );
    assert.equal(rows[0].key_text, null, 'the lane key rests sealed');
    return rows[0].sealed as string;
  };
  /** Rows of the three lane tables, every column as text (bytea as hex), that hold the candidate's key, digest, subject keys or `sealed`. */
  const tracesOf = async (candidate: string, email: string, sealed: readonly string[]) => {
    const key = `candidate:${candidate}`;
    const needles = [
      key,
      candidate,
      laneDigest({ id: 'idx', key: INDEX_KEY }, key).toString('hex'),
      ...sealed,
      subjectKey(INDEX_KEY, 'candidate_id', candidate)!,
      subjectKey(INDEX_KEY, 'email', email)!,
    ];
    const { rows } = await fixtures.db.knex.raw(`
      SELECT 'ordering_lanes ' || row_to_json(t)::text AS row FROM ordering_lanes t
      UNION ALL SELECT 'ordering_places ' || row_to_json(t)::text FROM ordering_places t
      UNION ALL SELECT 'ordering_lane_subjects ' || row_to_json(t)::text FROM ordering_lane_subjects t`);
    return (rows as Array<{ row: string }>)
      .map(({ row }) => row)
      .filter((row) => needles.some((needle) => row.includes(needle)));
  };

  /** A person with a delivered webhook of their key that names their address, and the lane key's sealed form. */
  const personDelivered = async (prefix: string) => {
    const [candidate, email] = [`c-${prefix}-${randomUUID()}`, `${prefix}-${randomUUID()}@example.org`];
    const first = await post(candidate, email);
    const sealed = [await sealedOf(first)];
    await delivered(first);
    return { candidate, email, first, sealed };
  };

  it('an erasure after an erasure', async () => {
    const { candidate, email, sealed } = await personDelivered('again');
    assert.equal(await erase({ candidate_id: candidate }), 1);
    assert.deepEqual(await tracesOf(candidate, email, sealed), []);
    const second = await post(candidate, email);
    sealed.push(await sealedOf(second));
    await delivered(second);
    assert.notDeepEqual(await tracesOf(candidate, email, sealed), [], 'the new lane holds the key until erased');
    assert.equal(await erase({ candidate_id: candidate }), 1);
    assert.deepEqual(await tracesOf(candidate, email, sealed), []);
  });

  it('two partial erasures: by e-mail while another webhook of the key waits for a retry, then by candidate id', async () => {
    const { candidate, email, sealed } = await personDelivered('partial');
    // The key's next webhook names another address and waits for its retry (503).
    const waiting = await post(candidate, `elsewhere-${randomUUID()}@example.net`, { failing: true });
    const attempts = async () =>
      Number((await fixtures.db.knex('webhook_attempts').where({ webhook_id: waiting }).count({ n: '*' }))[0].n);
    await eventually('the waiting webhook answered 503', async () => (await attempts()) > 0, 60_000);

    assert.equal(await erase({ email }), 1);
    const { rows } = await fixtures.db.knex.raw(
      `SELECT l.key_sealed IS NOT NULL AS keyed FROM ordering_lanes l JOIN ordering_places p ON p.lane_id = l.id WHERE p.webhook_id = ?`,
      [waiting],
    );
    assert.deepEqual(rows, [{ keyed: true }], 'the lane keeps its key while a webhook of it waits');
    assert.equal(await erase({ candidate_id: candidate }), 1);
    assert.equal(await statusOf(waiting), 'cancelled');
    assert.deepEqual(await tracesOf(candidate, email, sealed), []);
  });

  it('an erasure after the log purge took the only webhook that named the address', async () => {
    const { candidate, email, first: old, sealed } = await personDelivered('purged');
    const later = await post(candidate, `later-${randomUUID()}@example.net`);
    await delivered(later);
    await fixtures.db
      .knex('webhook_events')
      .where({ id: old })
      .update({ finished_at: new Date(Date.now() - 100 * 86_400_000) });
    const run = await runCli(['retention', 'run'], processes.common(queue));
    assert.equal(run.code, 0, run.stderr);
    assert.ok((JSON.parse(run.stdout) as { rows_deleted: number }).rows_deleted >= 1, run.stdout);
    assert.equal(await fixtures.db.knex('webhook_events').where({ id: old }).first('id'), undefined);
    assert.notDeepEqual(await tracesOf(candidate, email, sealed), [], 'the lane stays: a place is left');
    assert.equal(await erase({ email }), 0);
    assert.deepEqual(await tracesOf(candidate, email, sealed), []);
  });
});
