// The ordering sweep's walk over a long backlog, on real PostgreSQL and a real `temporal server start-dev`: 2,000
// keys each with a head that never settles and one webhook queued behind it. Each pass walks the next 200 queued
// places, oldest wait first, and describes each lane's head once; every head is looked at within one round of
// passes, and each pass costs two statements and at most 200 describes, whatever the backlog.
import assert from 'node:assert/strict';
import type { Knex } from 'knex';
import { sweepOrdering, SWEEP_WALK_STEP, type SweepWalk } from '../../application/ordering/ordering-sweep';
import { createLogger } from '../../lib/logger';
import { loadConfig } from '../../lib/config';
import { stalledHeads } from '../../store/ordering/lanes';
import { createTemporalGateway, type TemporalGateway } from '../../temporal/gateway';
import type { DevServer } from '../../temporal/dev-server';
import { createTestDatabase, type TestDatabase } from '../support/database';
import { startTestDevServer } from '../support/temporal';

const logger = createLogger('silent');
const KEYS = 2000;

/**
 * `count` lanes numbered from `from`, each with a head (seq 1, never started in Temporal, so it never settles) and
 * one webhook queued behind it; lane i's queued webhook has waited 1 hour minus i ms, so lane `from` is the oldest.
 */
async function seedStalledKeys(knex: Knex, from: number, count: number): Promise<void> {
  const range = [from, from + count - 1];
  await knex.raw(
    `INSERT INTO webhook_events (id, event_id, event_type, action, body, workflow_id)
     SELECT md5(k || ':' || i)::uuid, 'walk-' || k || '-' || i, 'job', 'update', '{}', 'walk-' || k || '-' || i
       FROM generate_series(?::int, ?::int) i, unnest(ARRAY['head', 'queued']) k`,
    range,
  );
  await knex.raw(
    `INSERT INTO ordering_lanes (key_digest, last_seq) SELECT decode(md5('lane:' || i), 'hex'), 2 FROM generate_series(?::int, ?::int) i`,
    range,
  );
  await knex.raw(
    `INSERT INTO ordering_places (webhook_id, lane_id, seq, waiting_since)
     SELECT md5(k || ':' || i)::uuid, l.id, CASE k WHEN 'head' THEN 1 ELSE 2 END,
            CASE k WHEN 'queued' THEN now() - interval '1 hour' + i * interval '1 millisecond' END
       FROM generate_series(?::int, ?::int) i JOIN ordering_lanes l ON l.key_digest = decode(md5('lane:' || i), 'hex'), unnest(ARRAY['head', 'queued']) k`,
    range,
  );
  await knex.raw('ANALYZE ordering_places, ordering_lanes, webhook_events');
}

describe('the ordering sweep walks a backlog of 2,000 stalled keys (PostgreSQL, dev server)', function () {
  this.timeout(300_000);
  let server: DevServer;
  let db: TestDatabase;
  let gateway: TemporalGateway;
  /** The workflow ids the sweep described, pass by pass: the real gateway's calls, seen on their way. */
  let described: string[];
  let statements = 0;
  const countStatement = () => statements++;

  before(async () => {
    server = await startTestDevServer();
    db = await createTestDatabase();
    gateway = createTemporalGateway(loadConfig({ TEMPORAL_ADDRESS: server.address }), logger);
    await seedStalledKeys(db.knex, 1, KEYS);
  });
  after(async () => {
    await gateway?.close();
    await db?.drop();
    await server?.stop();
  });

  const watched = (): Pick<TemporalGateway, 'runState' | 'wakeInOrder'> => ({
    runState: (workflowId) => {
      described.push(workflowId);
      return gateway.runState(workflowId);
    },
    wakeInOrder: (workflowId) => gateway.wakeInOrder(workflowId),
  });
  const heads = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => `walk-head-${from + i}`);

  it('looks at every head once per round of ceil(2,000 / 200) passes, oldest first, at 2 statements and <= 200 describes a pass', async () => {
    const walk: SweepWalk = { cursor: null };
    const deps = { knex: db.knex, logger, gateway: watched() };
    const passes: Array<{ describes: number; statements: number; ms: number }> = [];
    const seen: string[] = [];
    db.knex.on('query', countStatement);
    try {
      for (let pass = 1; pass <= KEYS / SWEEP_WALK_STEP + 2; pass++) {
        described = [];
        statements = 0;
        const started = performance.now();
        assert.deepEqual(await sweepOrdering(deps, 30_000, walk), { settled: 0, woken: 0 });
        passes.push({ describes: described.length, statements, ms: performance.now() - started });
        if (pass === 1)
          assert.deepEqual(
            [...described].sort(),
            heads(1, SWEEP_WALK_STEP).sort(),
            'the first pass takes the 200 oldest waits',
          );
        if (pass <= KEYS / SWEEP_WALK_STEP) seen.push(...described);
        if (pass === KEYS / SWEEP_WALK_STEP + 1)
          assert.deepEqual([described, walk.cursor], [[], null], 'the walk reached the end and starts again');
        if (pass === KEYS / SWEEP_WALK_STEP + 2)
          assert.deepEqual(
            [...described].sort(),
            heads(1, SWEEP_WALK_STEP).sort(),
            'the next round starts from the oldest',
          );
      }
    } finally {
      db.knex.off('query', countStatement);
    }
    assert.equal(seen.length, KEYS, 'each head described once in the round');
    assert.deepEqual([...new Set(seen)].sort(), heads(1, KEYS).sort(), 'every head described');
    for (const { describes, statements: count } of passes) {
      assert.ok(describes <= SWEEP_WALK_STEP, `${describes} describes in a pass`);
      assert.equal(count, 2, 'the walk and the lost wakes: two statements a pass');
    }
    const full = passes.slice(0, KEYS / SWEEP_WALK_STEP);
    const total = full.reduce((sum, p) => sum + p.ms, 0);
    console.log(
      `      ${KEYS} stalled keys: every head described in ${full.length} passes (${(total / 1000).toFixed(1)} s of passes; ` +
        `${((full.length * 15_000) / 1000).toFixed(0)} s at one pass per 15 s); a pass: 2 statements, ${SWEEP_WALK_STEP} describes, ` +
        `${Math.min(...full.map((p) => p.ms)).toFixed(0)}-${Math.max(...full.map((p) => p.ms)).toFixed(0)} ms`,
    );
  });

  it('keeps the walk statement at one step of 200 places whatever the backlog (2,000 against 22,000 keys)', async () => {
    const timeWalk = async () => {
      const times: number[] = [];
      let cursor = null;
      for (let i = 0; i < 10; i++) {
        const started = performance.now();
        const step = await stalledHeads(db.knex, 30_000, cursor, SWEEP_WALK_STEP);
        times.push(performance.now() - started);
        assert.equal(step.examined, SWEEP_WALK_STEP);
        assert.equal(step.heads.length, SWEEP_WALK_STEP);
        cursor = step.next;
      }
      return times.sort((a, b) => a - b)[5];
    };
    const small = await timeWalk();
    await seedStalledKeys(db.knex, KEYS + 1, 20_000);
    const large = await timeWalk();
    console.log(
      `      the walk statement (median of 10 steps of ${SWEEP_WALK_STEP}): ${small.toFixed(1)} ms at 2,000 keys, ${large.toFixed(1)} ms at 22,000`,
    );
    // Generous against a loaded machine: a walk that read the whole backlog would grow about elevenfold.
    assert.ok(large < small * 4 + 20, `${large.toFixed(1)} ms at 22,000 keys against ${small.toFixed(1)} ms at 2,000`);
  });
});
