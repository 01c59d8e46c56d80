import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { useTestDatabase } from '../support/database';
import { resetAuditTrail } from '../support/audit-trail';
import type { SqlFragment } from '../../db/sql';
import {
  deleteDueRows,
  deleteRowsStatement,
  purgeDueAuditEvents,
  OLDEST_BODY_STATEMENT,
  oldestStoredBody,
  purgeDue,
  removeBodiesStatement,
  removeDueBodies,
  retentionCutoffs,
} from '../../store/personal-data/retention-purge';

const DAY = 86_400_000;
/** The controlled clock of every test here: the purge runs "at" NOW. */
const NOW = new Date(Date.UTC(2026, 10, 26, 12, 0, 0));
const daysAgo = (days: number) => new Date(NOW.getTime() - days * DAY);

type Kind = 'delivered' | 'failed' | 'cancelled' | 'pending' | 'held' | 'waiting';

interface Seed {
  readonly kind: Kind;
  /** Days before NOW the webhook finished (finished kinds) or was accepted (the others). */
  readonly daysAgo: number;
  readonly redeliveryOf?: string;
  readonly sealed?: boolean;
}

describe('retention purge (store/personal-data/retention-purge.ts, a controlled clock)', function () {
  this.timeout(60_000);
  const db = useTestDatabase();

  beforeEach(async () => {
    await db.knex.raw('TRUNCATE webhook_events CASCADE');
    await resetAuditTrail(db.knex);
  });

  /** One webhook row with two attempts (each with a response excerpt); returns its id. */
  async function seed({ kind, daysAgo: age, redeliveryOf, sealed = false }: Seed): Promise<string> {
    const id = randomUUID();
    const at = daysAgo(age);
    const finished = ['delivered', 'failed', 'cancelled'].includes(kind);
    await db.knex('webhook_events').insert({
      id,
      event_id: `retention-${id}`,
      event_type: 'candidate',
      action: 'new',
      company_id: 'acme',
      body: sealed
        ? null
        : JSON.stringify({ event_type: 'candidate', action: 'new', data: { email: 'ada@example.com' } }),
      body_sealed: sealed ? Buffer.from('ciphertext') : null,
      body_key_id: sealed ? 'k1' : null,
      workflow_id: `wf-${id}`,
      run_id: randomUUID(),
      status: finished ? kind : 'pending',
      claimed_attempt: kind === 'waiting' ? 1 : 0,
      held_since: kind === 'held' ? at : null,
      held_queue: kind === 'held' ? 'webhooks' : null,
      created_at: at,
      accepted_at: at,
      finished_at: finished ? at : null,
      redelivery_of: redeliveryOf ?? null,
      redelivery_key: redeliveryOf ? `single:${randomUUID()}` : null,
    });
    for (const attempt of [1, 2]) {
      await db.knex('webhook_attempts').insert({
        webhook_id: id,
        attempt,
        scheduled_at: at,
        started_at: at,
        duration_ms: 5,
        http_status: 500,
        succeeded: false,
        response_body: sealed ? null : 'internal error for ada@example.com',
        response_body_sealed: sealed ? Buffer.from('ciphertext') : null,
        response_body_key_id: sealed ? 'k1' : null,
      });
    }
    return id;
  }

  const row = (id: string) =>
    db
      .knex('webhook_events')
      .where({ id })
      .first(
        'status',
        'body',
        'body_sealed',
        'body_key_id',
        'payload_removed_at',
        'payload_removed_reason',
        'finished_at',
      );
  const attempts = (id: string) =>
    db
      .knex('webhook_attempts')
      .where({ webhook_id: id })
      .orderBy('attempt')
      .select('attempt', 'http_status', 'response_body', 'response_body_sealed', 'response_body_key_id');

  const cutoffs = retentionCutoffs(NOW, { payloadDays: 30, logDays: 90, auditDays: 365 });

  it('computes the cutoffs from the days of retention', () => {
    assert.deepEqual(cutoffs, {
      payloadCutoff: new Date('2026-10-27T12:00:00.000Z'),
      logCutoff: new Date('2026-08-28T12:00:00.000Z'),
      auditCutoff: new Date('2025-11-26T12:00:00.000Z'),
    });
  });

  it("keeps a row while Temporal may still hold its run: past the namespace's retention and a day, when that is longer than the log's", () => {
    const policy = { payloadDays: 30, logDays: 90, auditDays: 365 };
    const day = 86_400;
    assert.deepEqual(
      retentionCutoffs(NOW, policy, 120 * day).logCutoff,
      new Date('2026-07-28T12:00:00.000Z'),
      '121 days before',
    );
    assert.deepEqual(
      retentionCutoffs(NOW, policy, 30 * day),
      cutoffs,
      "a namespace that keeps runs 30 days: the log's 90 days rule",
    );
    assert.deepEqual(
      retentionCutoffs(NOW, policy, 89 * day),
      cutoffs,
      '89 days and the day of margin: still the log retention',
    );
    assert.deepEqual(retentionCutoffs(NOW, policy, 0), cutoffs, 'no namespace recorded: no worker ever closed a run');
  });

  it('removes the body and the response excerpts of a finished webhook past payload retention, and keeps its row, attempts and status', async () => {
    const clear = await seed({ kind: 'delivered', daysAgo: 31 });
    const sealed = await seed({ kind: 'failed', daysAgo: 45, sealed: true });
    const cancelled = await seed({ kind: 'cancelled', daysAgo: 89 });
    const young = await seed({ kind: 'delivered', daysAgo: 29 });

    assert.equal(await removeDueBodies(db.knex, cutoffs.payloadCutoff, NOW), 3);

    for (const [id, status] of [
      [clear, 'delivered'],
      [sealed, 'failed'],
      [cancelled, 'cancelled'],
    ] as const) {
      assert.deepEqual(await row(id), {
        status,
        body: null,
        body_sealed: null,
        body_key_id: null,
        payload_removed_at: NOW,
        payload_removed_reason: 'retention',
        finished_at: (await db.knex('webhook_events').where({ id }).first('finished_at')).finished_at,
      });
      assert.deepEqual(
        await attempts(id),
        [1, 2].map((attempt) => ({
          attempt,
          http_status: 500,
          response_body: null,
          response_body_sealed: null,
          response_body_key_id: null,
        })),
      );
    }
    const kept = await row(young);
    assert.equal(kept.payload_removed_at, null);
    assert.deepEqual(kept.body, { event_type: 'candidate', action: 'new', data: { email: 'ada@example.com' } });
    assert.deepEqual(
      (await attempts(young)).map((a) => a.response_body),
      ['internal error for ada@example.com', 'internal error for ada@example.com'],
    );
    // A second pass finds nothing: a removed body is never removed again.
    assert.equal(await removeDueBodies(db.knex, cutoffs.payloadCutoff, new Date(NOW.getTime() + 1000)), 0);
    assert.deepEqual((await row(clear)).payload_removed_at, NOW);
  });

  it('never touches a held, pending or waiting webhook, however old', async () => {
    const open = [
      await seed({ kind: 'held', daysAgo: 400 }),
      await seed({ kind: 'pending', daysAgo: 400 }),
      await seed({ kind: 'waiting', daysAgo: 400 }),
    ];
    const progress = await purgeDue(db.knex, cutoffs, NOW);
    assert.deepEqual(progress, {
      bodiesRemoved: 0,
      rowsDeleted: 0,
      auditEventsDeleted: 0,
      auditBlockedAt: null,
      done: true,
    });
    for (const id of open) {
      const kept = await row(id);
      assert.equal(kept.status, 'pending');
      assert.equal(kept.payload_removed_at, null);
      assert.notEqual(kept.body, null);
      assert.equal((await attempts(id)).filter((a) => a.response_body !== null).length, 2);
    }
  });

  it('deletes a finished webhook past log retention with its attempts, and keeps an original while a redelivery of it is not due', async () => {
    const old = await seed({ kind: 'delivered', daysAgo: 91 });
    const keptOriginal = await seed({ kind: 'failed', daysAgo: 200 });
    const runningRedelivery = await seed({ kind: 'pending', daysAgo: 1, redeliveryOf: keptOriginal });
    const laterOriginal = await seed({ kind: 'failed', daysAgo: 200 });
    const youngRedelivery = await seed({ kind: 'delivered', daysAgo: 10, redeliveryOf: laterOriginal });
    const goneOriginal = await seed({ kind: 'failed', daysAgo: 200 });
    const goneRedelivery = await seed({ kind: 'delivered', daysAgo: 150, redeliveryOf: goneOriginal });
    const young = await seed({ kind: 'delivered', daysAgo: 89 });

    // The old row, and the due original with its due redelivery: three rows.
    assert.equal(await deleteDueRows(db.knex, cutoffs.logCutoff), 3);
    for (const id of [old, goneOriginal, goneRedelivery]) {
      assert.equal(await row(id), undefined);
      assert.deepEqual(await attempts(id), []);
    }
    for (const id of [keptOriginal, runningRedelivery, laterOriginal, youngRedelivery, young])
      assert.notEqual(await row(id), undefined);
    assert.equal(await deleteDueRows(db.knex, cutoffs.logCutoff), 0);
  });

  it('runs bounded batches until nothing is due, with exact counts, and reports each batch', async () => {
    for (let i = 0; i < 7; i++) await seed({ kind: 'delivered', daysAgo: 100 + i });
    for (let i = 0; i < 5; i++) await seed({ kind: 'failed', daysAgo: 40 + i });
    await seed({ kind: 'delivered', daysAgo: 2 });
    await seed({ kind: 'held', daysAgo: 100 });
    const batches: unknown[] = [];
    const progress = await purgeDue(db.knex, cutoffs, NOW, {
      batchSize: 3,
      afterBatch: (batch) => void batches.push(batch),
    });
    assert.deepEqual(progress, {
      bodiesRemoved: 5,
      rowsDeleted: 7,
      auditEventsDeleted: 0,
      auditBlockedAt: null,
      done: true,
    });
    assert.deepEqual(batches, [
      { bodiesRemoved: 0, rowsDeleted: 3 },
      { bodiesRemoved: 0, rowsDeleted: 3 },
      { bodiesRemoved: 3, rowsDeleted: 1 },
      { bodiesRemoved: 2, rowsDeleted: 0 },
    ]);
    assert.deepEqual(await db.knex('webhook_events').count('* as n').first(), { n: 7 });
    assert.deepEqual(await db.knex('webhook_events').whereNotNull('payload_removed_at').count('* as n').first(), {
      n: 5,
    });
  });

  it('stops after the batch that passes its time budget and says it is not done', async () => {
    for (let i = 0; i < 4; i++) await seed({ kind: 'delivered', daysAgo: 100 + i });
    const first = await purgeDue(db.knex, cutoffs, NOW, { batchSize: 2, untilMs: 0 });
    assert.deepEqual(first, {
      bodiesRemoved: 0,
      rowsDeleted: 2,
      auditEventsDeleted: 0,
      auditBlockedAt: null,
      done: false,
    });
    const rest = await purgeDue(db.knex, cutoffs, NOW, { batchSize: 2 });
    assert.deepEqual(rest, {
      bodiesRemoved: 0,
      rowsDeleted: 2,
      auditEventsDeleted: 0,
      auditBlockedAt: null,
      done: true,
    });
  });

  /** One audit row made `age` days before NOW; returns its id. */
  async function seedAuditEvent(age: number): Promise<string> {
    const [row] = await db
      .knex('audit_events')
      .insert({
        at: daysAgo(age),
        actor: 'ops-bot',
        action: 'partner.pause',
        target: 'q',
        parameters: { reason: 'drill' },
        outcome: 'succeeded',
      })
      .returning('id');
    return String(row.id);
  }
  /** The audit rows left, the purge's own audit.purge rows aside. */
  const auditIds = async () =>
    (await db.knex('audit_events').whereNot({ action: 'audit.purge' }).orderBy('id').select('id')).map((row) =>
      String(row.id),
    );
  const purgeRows = () =>
    db.knex('audit_events').where({ action: 'audit.purge' }).orderBy('seq').select('actor', 'parameters');

  it('deletes audit rows older than AUDIT_RETENTION_DAYS in bounded batches, after the webhooks, and keeps the younger ones', async () => {
    for (const age of [366, 400, 500, 900, 1000]) await seedAuditEvent(age);
    const young = [await seedAuditEvent(364), await seedAuditEvent(1)];
    await seed({ kind: 'delivered', daysAgo: 100 });
    const batches: unknown[] = [];
    const progress = await purgeDue(db.knex, cutoffs, NOW, {
      batchSize: 2,
      afterBatch: (batch) => void batches.push(batch),
    });
    assert.deepEqual(progress, {
      bodiesRemoved: 0,
      rowsDeleted: 1,
      auditEventsDeleted: 5,
      auditBlockedAt: null,
      done: true,
    });
    // The webhook row's batch finds no body due and goes on with audit rows: 2, 2 and 1 of them.
    assert.equal(batches.length, 3);
    assert.deepEqual(await auditIds(), young);
    // Each batch that removed rows recorded itself: who, how many, and the anchor it left (the last row removed).
    const purges = await purgeRows();
    assert.deepEqual(
      purges.map((p) => [p.actor, p.parameters.rows_removed, p.parameters.anchor_seq]),
      [
        ['retention-schedule', 2, 2],
        ['retention-schedule', 2, 4],
        ['retention-schedule', 1, 5],
      ],
    );
    assert.match(purges[2].parameters.anchor_hash, /^[0-9a-f]{64}$/);
    assert.equal((await purgeDueAuditEvents(db.knex, cutoffs.auditCutoff, 'test-operator')).removed, 0);
    assert.equal((await purgeRows()).length, 3, 'a purge that removes nothing writes no row');
  });

  it('leaves audit rows to the next call when the time budget ends first, and deletes an audit row 1 ms past the cutoff but keeps one made at it', async () => {
    await seedAuditEvent(365 + 1 / 86_400_000);
    const atCutoff = await seedAuditEvent(365);
    const first = await purgeDue(db.knex, cutoffs, NOW, { batchSize: 1, untilMs: 0 });
    assert.deepEqual(first, {
      bodiesRemoved: 0,
      rowsDeleted: 0,
      auditEventsDeleted: 1,
      auditBlockedAt: null,
      done: false,
    });
    const rest = await purgeDue(db.knex, cutoffs, NOW, { batchSize: 1 });
    assert.deepEqual(rest, {
      bodiesRemoved: 0,
      rowsDeleted: 0,
      auditEventsDeleted: 0,
      auditBlockedAt: null,
      done: true,
    });
    assert.deepEqual(await auditIds(), [atCutoff]);
  });

  it('reads the finish time of the oldest stored body of a finished webhook', async () => {
    assert.equal(await oldestStoredBody(db.knex), null);
    await seed({ kind: 'held', daysAgo: 400 });
    const oldest = await seed({ kind: 'delivered', daysAgo: 50 });
    await seed({ kind: 'delivered', daysAgo: 20 });
    assert.deepEqual(await oldestStoredBody(db.knex), daysAgo(50));
    await removeDueBodies(db.knex, cutoffs.payloadCutoff, NOW);
    assert.equal((await row(oldest)).payload_removed_at?.getTime(), NOW.getTime());
    assert.deepEqual(await oldestStoredBody(db.knex), daysAgo(20));
  });

  it('uses the partial indexes for each batch (EXPLAIN)', async () => {
    // Enough rows that a sequential scan is not free, statistics fresh.
    await db.knex.raw(`
      INSERT INTO webhook_events (id, event_id, event_type, action, company_id, body, workflow_id, run_id, status, accepted_at, created_at, finished_at)
      SELECT gen_random_uuid(), 'explain-' || g, 'candidate', 'new', 'acme', '{}'::json, 'wf-explain-' || g, 'run', 'delivered',
             now(), now(), CASE WHEN g % 10 = 0 THEN NULL ELSE now() - g * interval '1 minute' END
        FROM generate_series(1, 20000) g`);
    // The older half's bodies are gone already, as after earlier runs; each webhook has one attempt.
    await db.knex.raw(
      `UPDATE webhook_events SET body = NULL, payload_removed_at = now(), payload_removed_reason = 'retention' WHERE finished_at < now() - interval '10000 minutes'`,
    );
    await db.knex.raw(`
      INSERT INTO webhook_attempts (webhook_id, attempt, scheduled_at, started_at, duration_ms, http_status, succeeded, response_body)
      SELECT id, 1, now(), now(), 5, 200, true, 'ok' FROM webhook_events`);
    await db.knex.raw('ANALYZE webhook_events, webhook_attempts');
    const plan = async ({ sql, bindings }: SqlFragment) => {
      const result = await db.knex.raw(`EXPLAIN ${sql}`, bindings as never);
      return (result.rows as { 'QUERY PLAN': string }[]).map((r) => r['QUERY PLAN']).join('\n');
    };
    const bodies = await plan(removeBodiesStatement(new Date(), NOW, 1000));
    assert.match(bodies, /Index Scan using webhook_events_payload_due/);
    assert.match(bodies, /Index Scan on webhook_attempts_pkey/);
    assert.doesNotMatch(bodies, /Seq Scan/);
    const rows = await plan(deleteRowsStatement(new Date(), 1000));
    assert.match(rows, /Index Scan using webhook_events_log_due/);
    assert.doesNotMatch(rows, /Seq Scan/);
    assert.match(await plan(OLDEST_BODY_STATEMENT), /Index Only Scan using webhook_events_payload_due/);
    await db.knex.raw(`
      INSERT INTO audit_events (at, actor, action, target, parameters, outcome)
      SELECT now() - g * interval '1 minute', 'ops-bot', 'partner.limit', 'q', '{}'::jsonb, 'succeeded' FROM generate_series(1, 20000) g`);
    await db.knex.raw('ANALYZE audit_events');
    // The audit purge (purge_audit_events) walks the chain from its oldest row on the unique index of seq.
    const audit = await plan({ sql: 'SELECT * FROM audit_events ORDER BY seq LIMIT 1000', bindings: [] });
    assert.match(audit, /Index Scan using audit_events_seq_key/);
    assert.doesNotMatch(audit, /Seq Scan/);
  });
});
