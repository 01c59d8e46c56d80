// Per-entity ordering under faults on a real dev server, with the service's own processes (two `partner-service
// api` and two `partner-service worker` on one task queue, WEBHOOK_ORDERING=entity): 200 keys x 20 webhooks sent
// by 16 callers, each key's webhooks one after the other; the partner answers 503 to a fifth of first attempts,
// with jittered latency; after about 30% of the deliveries a worker is SIGKILLed mid-POST (the partner holds its
// answers for a second around the kill) and another one started. The real schedule (10 s before a second
// attempt) applies. Then, from the partner's log and PostgreSQL: each key delivered in sequence order 1..20, each
// webhook once (a repeat only of an attempt the kill left unrecorded), one POST of a key at a time, no gap, every
// row delivered, every run completed.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { findFreePort } from '../../lib/ports';
import type { DevServer } from '../../temporal/dev-server';
import jobNew from '../fixtures/events/job-new.json';
import { createTestDatabase, type TestDatabase } from '../support/database';
import { eventually } from '../support/eventually';
import { waitForRunsCompleted } from '../support/runs-completed';
import { startPartnerServer, type PartnerServer } from '../support/partner-server';
import { serviceProcesses, stopServiceFixtures } from '../support/service-processes';
import { startTestDevServer, tempDir } from '../support/temporal';
import { submitWebhook } from '../support/api';
import { INTERNAL_TOKEN } from '../support/tokens';

const KEYS = 200;
const PER_KEY = 20;
const TOTAL = KEYS * PER_KEY;
const CALLERS = 16;
const FIRST_TRY_FAILURES = 0.2;

/** One POST as the partner saw it: when it came and when it was answered, on this process's clock. */
interface Post {
  readonly webhookId: string;
  readonly key: string;
  readonly sequence: number;
  readonly status: number;
  readonly startedMs: number;
  endedMs: number;
  /** Its connection closed before the answer: the worker that sent it was killed. */
  abandoned: boolean;
}

describe('per-entity ordering under faults: 200 keys x 20 webhooks, 2 APIs, 2 workers, one SIGKILLed', function () {
  let work: string;
  let serverPort: number;
  let server: DevServer;
  let db: TestDatabase;
  let partner: PartnerServer;
  const posts: Post[] = [];
  /** The POSTs received and not answered yet. */
  const open = new Set<Post>();
  /** The webhooks whose first POST the partner answers 503, drawn at that first POST. */
  const failedFirst = new Set<string>();
  const seen = new Set<string>();
  /** What each answer waits for after its latency: open, except around the kill. */
  let gate: Promise<void> = Promise.resolve();

  before(async function () {
    this.timeout(60_000);
    work = await tempDir('ordering-drill');
    serverPort = await findFreePort();
    // In memory: nothing is restarted, and a database file's writes slow the server down on a busy machine.
    [server, db] = await Promise.all([startTestDevServer({ port: serverPort }), createTestDatabase()]);
    partner = await startPartnerServer((req, res) => {
      const webhookId = String(req.headers['webhook-id']);
      const first = !seen.has(webhookId);
      seen.add(webhookId);
      if (first && Math.random() < FIRST_TRY_FAILURES) failedFirst.add(webhookId);
      const status = first && failedFirst.has(webhookId) ? 503 : 204;
      const key = String(req.headers['webhook-ordering-key']);
      const post: Post = {
        webhookId,
        key,
        sequence: Number(req.headers['webhook-sequence']),
        status,
        startedMs: performance.now(),
        endedMs: NaN,
        abandoned: false,
      };
      posts.push(post);
      open.add(post);
      res.once('close', () => {
        open.delete(post);
        if (Number.isNaN(post.endedMs)) post.abandoned = true;
      });
      // Jittered latency, so that a second POST of one key while the first is open would show as an overlap.
      void new Promise((r) => setTimeout(r, 2 + Math.floor(Math.random() * 28)))
        .then(() => gate)
        .then(() => {
          post.endedMs = performance.now();
          res.writeHead(status).end();
        });
    });
  });

  after(async function () {
    this.timeout(60_000);
    await stopServiceFixtures(processes, { partner, db, server, work });
  });

  // The partner protection must not hold deliveries: a fifth of first tries fail, and 200 keys go at once.
  const processes = serviceProcesses(
    () => ({ work, databaseUrl: db.url, temporalPort: serverPort, partnerUrl: partner.url }),
    {
      INTERNAL_API_TOKEN: INTERNAL_TOKEN,
      WEBHOOK_ORDERING: 'entity',
      PARTNER_MAX_CONCURRENCY: '50',
      PARTNER_MAX_PER_SECOND: '100000',
      PARTNER_BREAKER_FAILURES: '10000',
      PARTNER_TIMEOUT_MS: '5000',
    },
  );
  const { startWorker, startApi, kill } = processes;

  const jobEvent = (jobId: string, i: number) => ({
    ...structuredClone(jobNew),
    action: i === 0 ? 'new' : 'update',
    event_id: `ordering-drill-${jobId}-${i}`,
    data: { ...structuredClone(jobNew.data), job: { ...jobNew.data.job, id: jobId } },
  });
  /** Each unfinished key's head, to name the keys that do not move when the drill times out. */
  const openHeads = async () =>
    (
      await db.knex.raw(
        `SELECT l.key_text, p.seq, w.status, w.claimed_attempt, p.waiting_since FROM ordering_places p JOIN ordering_lanes l ON l.id = p.lane_id JOIN webhook_events w ON w.id = p.webhook_id
          WHERE p.settled_at IS NULL AND NOT EXISTS (SELECT 1 FROM ordering_places q WHERE q.lane_id = p.lane_id AND q.seq < p.seq AND q.settled_at IS NULL)`,
      )
    ).rows;

  it('delivers each key in sequence order, once each, one POST at a time, with no gap, across a worker SIGKILLed mid-POST', async function () {
    this.timeout(900_000);
    const queue = `ordering-drill-${randomUUID()}`;
    const apis = await Promise.all([startApi(queue), startApi(queue)]);
    const [workerA] = await Promise.all([startWorker(queue), startWorker(queue)]);
    const began = performance.now();

    // Each caller takes the next key and posts its 20 webhooks one after the other, alternating the two APIs.
    const keys = Array.from({ length: KEYS }, () => `j-${randomUUID()}`);
    const accepted = new Map<string, string[]>();
    let nextKey = 0;
    const ingestion = Promise.all(
      Array.from({ length: CALLERS }, async () => {
        while (nextKey < KEYS) {
          const jobId = keys[nextKey++];
          const ids: string[] = [];
          accepted.set(`job:${jobId}`, ids);
          for (let i = 0; i < PER_KEY; i++) {
            ids.push((await submitWebhook(apis[i % 2], INTERNAL_TOKEN, jobEvent(jobId, i))).webhook_id);
          }
        }
      }),
    ).then(
      () => performance.now() - began,
      (error: unknown) => error as Error,
    );

    const delivered = () => new Set(posts.filter((p) => p.status === 204).map((p) => p.webhookId)).size;
    await eventually('30% delivered', async () => delivered() >= 0.3 * TOTAL, 300_000);
    // The kill lands mid-POST: the answers wait a second (well under PARTNER_TIMEOUT_MS), so both workers have
    // POSTs open. Then the POSTs open at the kill, and (once the dead process's last writes are in) the attempts
    // claimed and not recorded: only these may be POSTed again, as the service cannot know their outcome.
    let release!: () => void;
    gate = new Promise((r) => (release = r));
    await new Promise((r) => setTimeout(r, 1000));
    const atKill = new Set([...open].map((p) => p.webhookId));
    const deliveredAtKill = delivered();
    await kill(workerA.child);
    await new Promise((r) => setTimeout(r, 200));
    const { rows: unrecorded } = (await db.knex.raw(
      `SELECT e.id FROM webhook_events e WHERE e.claimed_attempt > (SELECT count(*) FROM webhook_attempts a WHERE a.webhook_id = e.id)`,
    )) as {
      rows: Array<{ id: string }>;
    };
    for (const { id } of unrecorded) atKill.add(id);
    release();
    gate = Promise.resolve();
    await startWorker(queue);

    const ingestMs = await ingestion;
    if (ingestMs instanceof Error) throw ingestMs;
    const ids = [...accepted.values()].flat();
    assert.equal(new Set(ids).size, TOTAL);
    await eventually('every webhook delivered at the partner', async () => delivered() === TOTAL, 300_000).catch(
      async (error: Error) => {
        throw new Error(`${error.message}; open heads: ${JSON.stringify(await openHeads())}`);
      },
    );
    await eventually(
      'every row delivered',
      async () => {
        const [{ count }] = await db
          .knex('webhook_events')
          .whereIn('id', ids)
          .where({ status: 'delivered' })
          .count({ count: '*' });
        return Number(count) === TOTAL;
      },
      60_000,
    );
    const drainedMs = performance.now() - began;
    let completedMs: number;
    const connection = await Connection.connect({ address: server.address });
    try {
      const client = new Client({ connection });
      const runs = await db.knex('webhook_events').whereIn('id', ids).pluck('workflow_id');
      await waitForRunsCompleted(client, queue, runs, 120_000);
      completedMs = performance.now() - began - drainedMs;
    } finally {
      await connection.close();
    }

    const known = new Set(ids);
    assert.deepEqual(
      posts.filter((p) => !known.has(p.webhookId)),
      [],
      'no POST of an unknown webhook',
    );
    const postsOf = groupBy(posts, (p) => p.webhookId);
    const repeated = [...postsOf].filter(([, of]) => of.filter((p) => p.status === 204).length > 1).map(([id]) => id);
    assert.deepEqual(
      repeated.filter((id) => !atKill.has(id)),
      [],
      'a 2XX repeated that the kill did not leave unrecorded',
    );
    for (const [key, keyIds] of accepted) {
      const ofKey = posts.filter((p) => p.key === key).sort((a, b) => a.startedMs - b.startedMs);
      // Each webhook's first 2XX, in arrival order: the order accepted, numbered 1..20.
      const firsts = ofKey.filter(
        (p, i) => p.status === 204 && !ofKey.slice(0, i).some((q) => q.webhookId === p.webhookId && q.status === 204),
      );
      assert.deepEqual(
        firsts.map((p) => p.webhookId),
        keyIds,
        `${key}: delivered in the order accepted`,
      );
      assert.deepEqual(
        firsts.map((p) => p.sequence),
        keyIds.map((_, i) => i + 1),
        `${key}: sequence 1 to ${PER_KEY}`,
      );
      // Webhook n+1 is POSTed only once n is done, and a key has one POST open at a time.
      for (let i = 1; i < ofKey.length; i++) {
        assert.ok(
          ofKey[i].sequence >= ofKey[i - 1].sequence,
          `${key}: sequence ${ofKey[i].sequence} POSTed after ${ofKey[i - 1].sequence}`,
        );
        assert.ok(ofKey[i].startedMs >= ofKey[i - 1].endedMs, `${key}: two POSTs open at once`);
      }
    }
    assert.equal(posts.filter((p) => !accepted.has(p.key)).length, 0, 'every POST carried its key');

    // PostgreSQL recorded what the partner answered; each POST the kill cut off is an attempt recorded lost (a
    // timeout), and the webhook was delivered by a later attempt. Away from the kill, exactly the scripted answers.
    const attempts = groupBy(
      (await db
        .knex('webhook_attempts')
        .whereIn('webhook_id', ids)
        .orderBy(['webhook_id', 'attempt'])
        .select('webhook_id', 'attempt', 'http_status', 'error_class')) as Array<{
        webhook_id: string;
        attempt: number;
        http_status: number | null;
        error_class: string | null;
      }>,
      (a) => a.webhook_id,
    );
    const abandoned = posts.filter((p) => p.abandoned);
    assert.ok(abandoned.length > 0, 'the kill cut off no POST');
    for (const post of abandoned) {
      const n = postsOf.get(post.webhookId)!.indexOf(post);
      assert.deepEqual(attempts.get(post.webhookId)![n], {
        webhook_id: post.webhookId,
        attempt: n + 1,
        http_status: null,
        error_class: 'timeout',
      });
    }
    for (const id of ids) {
      const answers = postsOf.get(id)!.map((p) => p.status);
      const recorded = attempts.get(id)!;
      assert.equal(recorded.at(-1)!.http_status, 204, id);
      if (atKill.has(id)) continue;
      assert.deepEqual(answers, failedFirst.has(id) ? [503, 204] : [204], id);
      assert.deepEqual(
        recorded.map((a) => [a.attempt, a.http_status]),
        answers.map((status, i) => [i + 1, status]),
        id,
      );
    }

    const [lanes] = (
      await db.knex.raw(
        `SELECT count(*)::int AS lanes, min(last_seq)::int AS min_seq, max(last_seq)::int AS max_seq, sum(gaps)::int AS gaps FROM ordering_lanes WHERE key_text = ANY(?)`,
        [[...accepted.keys()]],
      )
    ).rows;
    assert.deepEqual(lanes, { lanes: KEYS, min_seq: PER_KEY, max_seq: PER_KEY, gaps: 0 });
    const [places] = (
      await db.knex.raw(
        `SELECT count(*)::int AS places, count(*) FILTER (WHERE p.gap)::int AS gaps, count(*) FILTER (WHERE p.settled_at IS NULL OR p.waiting_since IS NOT NULL)::int AS open
           FROM ordering_places p JOIN ordering_lanes l ON l.id = p.lane_id WHERE l.key_text = ANY(?)`,
        [[...accepted.keys()]],
      )
    ).rows;
    assert.deepEqual(places, { places: TOTAL, gaps: 0, open: 0 });

    const fiveOhThrees = posts.filter((p) => p.status === 503).length;
    assert.ok(fiveOhThrees > 0, 'some first tries failed');
    console.log(
      `      ordering drill: ${TOTAL} delivered over ${KEYS} keys in ${(drainedMs / 1000).toFixed(1)} s (${((TOTAL * 1000) / drainedMs).toFixed(1)} deliveries/s; ingestion ${(ingestMs / 1000).toFixed(1)} s; every run completed ${(completedMs / 1000).toFixed(1)} s later), ${fiveOhThrees} first tries answered 503, ${posts.length} POSTs; at the kill (${deliveredAtKill} delivered): ${abandoned.length} POSTs cut off, ${atKill.size} webhooks open or unrecorded, ${repeated.length} 2XX repeated`,
    );
  });
});

/** Map.groupBy, which Node 20 lacks. */
function groupBy<T>(items: readonly T[], keyOf: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const group = groups.get(keyOf(item));
    if (group) group.push(item);
    else groups.set(keyOf(item), [item]);
  }
  return groups;
}
