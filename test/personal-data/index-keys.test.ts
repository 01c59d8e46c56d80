// Subject index keys with ids on real PostgreSQL and the compiled CLI: a process with no key, another key under a
// known id, or without a key still in use is refused (ingestion and erasure alike, nothing written); `personal-data
// reindex` moves every row with a body to the newest key, survives a SIGKILL half-way, and retires the old keys,
// after which the newest key alone finds every person.
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { loadConfig } from '../../lib/config';
import { dataAtRest } from '../../lib/at-rest';
import { subjectKey, type SubjectIndexKey } from '../../lib/subject-index';
import { prepareWebhook } from '../../application/ingestion/start-webhook';
import { insertWebhook } from '../../store/ingestion/webhook-ingestion';
import { indexKeysOf } from '../../store/personal-data/subject-index-keys';
import candidateNew from '../fixtures/events/candidate-new.json';
import { runCli, startCli, waitForExit } from '../support/cli';
import { createTestDatabase, type TestDatabase } from '../support/database';

const ROWS = 6000;
const keyOf = (id: string): SubjectIndexKey & { text: string } => {
  const key = randomBytes(32);
  return { id, key, text: `${id}:${key.toString('base64')}` };
};

describe('subject index keys: refusals, and a reindex killed half-way and resumed', function () {
  this.timeout(120_000);
  let db: TestDatabase;
  const [k1, k2] = [keyOf('k1'), keyOf('k2')];
  const env = (keys?: string): NodeJS.ProcessEnv => ({
    PATH: process.env.PATH,
    DATABASE_URL: db.url,
    ...(keys && { SUBJECT_INDEX_KEYS: keys }),
  });
  const atRestWith = (keys?: string) => dataAtRest(loadConfig(keys ? { SUBJECT_INDEX_KEYS: keys } : {}));
  const eventFor = (candidateId: string) => {
    const event = structuredClone(candidateNew);
    event.event_id = `keys-${randomUUID()}`;
    event.data.candidate.id = candidateId;
    return event;
  };
  const ingest = (keys: string | undefined, candidateId: string) => {
    const prepared = prepareWebhook(eventFor(candidateId));
    return insertWebhook(db.knex, atRestWith(keys), {
      ...prepared,
      event: prepared.input.event,
      runId: null,
      isTest: false,
    });
  };
  const countRows = async (where: string, bindings: readonly string[] = []) =>
    Number((await db.knex('webhook_events').whereRaw(where, bindings).count({ n: '*' }))[0].n);

  before(async () => {
    db = await createTestDatabase();
    // The deployment's first keyed process registers k1; every row is indexed under it.
    await indexKeysOf(db.knex, atRestWith(k1.text));
    const rows = Array.from({ length: ROWS }, (_, i) => {
      const candidateId = `c-${i}`;
      const prepared = prepareWebhook(eventFor(candidateId));
      return {
        id: prepared.webhookId,
        event_id: prepared.eventId,
        event_type: 'candidate',
        action: 'new',
        company_id: 'acme',
        body: JSON.stringify(prepared.input.event),
        workflow_id: prepared.workflowId,
        status: 'delivered',
        subject_keys: [subjectKey(k1.key, 'candidate_id', candidateId)!],
        subject_key_id: 'k1',
      };
    });
    await db.knex.batchInsert('webhook_events', rows, 1000);
  });
  after(() => db?.drop());

  it('refuses a process with no key, another key under a known id, or without a key in use: ingestion and erasure, nothing written', async () => {
    const before = await countRows('true');
    const refusals: Array<[string | undefined, RegExp]> = [
      [
        undefined,
        /^SUBJECT_INDEX_KEYS is not set, but this deployment indexes personal data under key k1: give this process the deployment's SUBJECT_INDEX_KEYS$/,
      ],
      [
        `k1:${randomBytes(32).toString('base64')}`,
        /^SUBJECT_INDEX_KEYS gives key id k1 another key than the one this deployment indexed under with that id$/,
      ],
      [
        k2.text,
        /^this deployment indexes personal data under key k1, which SUBJECT_INDEX_KEYS does not list: keep it listed until partner-service personal-data reindex retires it$/,
      ],
    ];
    for (const [keys, message] of refusals) {
      await assert.rejects(ingest(keys, 'c-new'), { name: 'SubjectIndexKeyError', message }, keys);
      const erase = await runCli(['erase', '--candidate-id', 'c-1'], env(keys));
      assert.equal(erase.code, 2, erase.stderr);
      assert.match(erase.stderr.trim(), message);
      assert.equal(erase.stdout, '');
    }
    assert.equal(await countRows('true'), before, 'no row written');
    assert.equal(Number((await db.knex('erasures').count({ n: '*' }))[0].n), 0, 'no erasure recorded');
    // A new deployment with no key at all (not `start`'s development mode) refuses too.
    await db.knex('subject_index_keys').update({ retired_at: new Date() });
    await assert.rejects(ingest(undefined, 'c-new'), {
      message:
        'SUBJECT_INDEX_KEYS is not set: set it (docs/personal-data.md#index-keys); only partner-service start indexes with the public development key',
    });
    await db.knex('subject_index_keys').update({ retired_at: null });
  });

  it('reindexes to the newest key: killed after its first batch, resumed to the end, the old keys retired; the new key alone finds everyone', async () => {
    const both = `${k2.text} ${k1.text}`;
    const first = startCli(['personal-data', 'reindex'], env(both), process.cwd(), /$^/);
    first.started.catch(() => undefined);
    await new Promise<void>((resolve) =>
      first.child.stderr.on('data', () => /^reindexed \d+ rows$/m.test(first.output.stderr) && resolve()),
    );
    first.child.kill('SIGKILL');
    await waitForExit(first.child);
    const movedBeforeKill = await countRows('subject_key_id = ?', ['k2']);
    console.log(`      killed with ${movedBeforeKill} of ${ROWS} rows moved`);
    assert.ok(movedBeforeKill > 0 && movedBeforeKill < ROWS, `half-way: ${movedBeforeKill}`);

    const resumed = await runCli(['personal-data', 'reindex'], env(both));
    assert.equal(resumed.code, 0, resumed.stderr);
    assert.deepEqual(JSON.parse(resumed.stdout), {
      index_key_id: 'k2',
      rows_reindexed: ROWS - movedBeforeKill,
      rows_unreadable: 0,
      rows_left: {},
      lanes_reindexed: 0,
      lanes_unreadable: 0,
      lanes_left: {},
      keys_retired: ['development', 'k1'],
    });
    assert.match(resumed.stderr, /^reindexed \d+ rows$/m);
    assert.equal(await countRows('subject_key_id = ?', ['k2']), ROWS);

    // k1 is retired: a process with k2 alone indexes and finds every row; one with k1 alone is refused.
    await ingest(k2.text, 'c-new-under-k2');
    for (const candidateId of ['c-0', `c-${ROWS - 1}`, 'c-new-under-k2']) {
      assert.equal(
        await countRows('subject_keys @> ARRAY[?::text]', [subjectKey(k2.key, 'candidate_id', candidateId)!]),
        1,
        candidateId,
      );
    }
    await assert.rejects(ingest(k1.text, 'c-x'), {
      message: "SUBJECT_INDEX_KEYS lists key k1 first, which a reindex retired: put the deployment's newest key first",
    });
    const again = await runCli(['personal-data', 'reindex'], env(k2.text));
    assert.deepEqual(JSON.parse(again.stdout), {
      index_key_id: 'k2',
      rows_reindexed: 0,
      rows_unreadable: 0,
      rows_left: {},
      lanes_reindexed: 0,
      lanes_unreadable: 0,
      lanes_left: {},
      keys_retired: [],
    });
  });
});
