// Ordering lanes and personal data on real PostgreSQL (issue 56, points 2 and 3): the log purge (and a start that
// certainly failed) deletes the lanes it leaves empty; an erasure after an erasure, after two partial erasures and
// after the purge leaves no lane row holding the key, its digest under any listed index key, its sealed form or the
// subject's keys (plain SQL over every column of ordering_lanes, ordering_places and ordering_lane_subjects); a
// lane that gets a place while an erasure waits for its lock keeps its key; after an index key rotation an entity
// keeps its lane, `skip`/`retry`'s lookup finds it, and `personal-data reindex` moves its digest and subjects to the newest key.
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { loadConfig } from '../../lib/config';
import { dataAtRest, type DataAtRest } from '../../lib/at-rest';
import { subjectKey, type SubjectIndexKey, type SubjectKind } from '../../lib/subject-index';
import { prepareWebhook } from '../../application/ingestion/start-webhook';
import { reindexSubjects } from '../../application/personal-data/index-keys';
import { claimEvent, forgetUnstartedWebhook } from '../../store/ingestion/webhook-ingestion';
import { headOfKey, laneDigest, placeOf, takeTurn } from '../../store/ordering/lanes';
import { eraseSubjectWebhooks, forgetErasureLanes } from '../../store/personal-data/erasure-steps';
import { insertErasure } from '../../store/personal-data/erasures';
import { deleteDueRows } from '../../store/personal-data/retention-purge';
import candidateNew from '../fixtures/events/candidate-new.json';
import { createTestDatabase, type TestDatabase } from '../support/database';
import { eventually } from '../support/eventually';

const indexKey = (id: string): SubjectIndexKey & { text: string } => {
  const key = randomBytes(32);
  return { id, key, text: `${id}:${key.toString('base64')}` };
};
const PAYLOAD = `p1:${randomBytes(32).toString('base64')}`;

describe('ordering lanes: purge, erasure and index key rotation', function () {
  this.timeout(60_000);
  let db: TestDatabase;
  const [i1, i2] = [indexKey('i1'), indexKey('i2')];
  const atRest = new Map<string, DataAtRest>();
  /** One DataAtRest per SUBJECT_INDEX_KEYS setting, payload-keyed: lane keys rest sealed. */
  const under = (...keys: Array<typeof i1>): DataAtRest => {
    const setting = keys.map((key) => key.text).join(' ');
    if (!atRest.has(setting))
      atRest.set(setting, dataAtRest(loadConfig({ SUBJECT_INDEX_KEYS: setting, PAYLOAD_ENCRYPTION_KEYS: PAYLOAD })));
    return atRest.get(setting)!;
  };

  before(async () => {
    db = await createTestDatabase();
    await claimEvent(db.knex, under(i1), webhookOf(eventFor(`warm-${randomUUID()}`)));
  });
  after(() => db?.drop());

  const eventFor = (candidateId: string, email = `${candidateId}@example.org`) => {
    const event = structuredClone(candidateNew);
    event.event_id = `lanes-${randomUUID()}`;
    event.data.candidate.id = candidateId;
    event.data.candidate.email = email;
    return event;
  };
  const webhookOf = (event: ReturnType<typeof eventFor>) => {
    const prepared = prepareWebhook(event, undefined, 'entity');
    return {
      ...prepared,
      event: prepared.input.event,
      orderingKey: prepared.input.orderingKey,
      runId: null,
      isTest: false,
    };
  };
  /** Ingests an ordered webhook of the candidate (its key `candidate:<id>`) under `keys`; its webhook id. */
  const ingest = async (keys: DataAtRest, event: ReturnType<typeof eventFor>, knex = db.knex): Promise<string> => {
    const webhook = webhookOf(event);
    const claim = await claimEvent(knex, keys, webhook);
    assert.equal(claim.kind, 'start');
    return webhook.webhookId;
  };
  /** A webhook delivered (its place settled) `daysAgo` days ago. */
  const deliver = async (webhookId: string, daysAgo = 0) => {
    const finishedAt = new Date(Date.now() - daysAgo * 86_400_000);
    await db.knex('webhook_events').where({ id: webhookId }).update({ status: 'delivered', finished_at: finishedAt });
    await db.knex('ordering_places').where({ webhook_id: webhookId }).update({ settled_at: finishedAt });
  };
  /** The erasure's transaction, as its workflow runs it, with the subject's keys under every listed index key. */
  const erase = async (kind: SubjectKind, value: string) => {
    const id = randomUUID();
    const keys = [i1, i2].map((key) => subjectKey(key.key, kind, value)!);
    await insertErasure(db.knex, {
      id,
      subjectKind: kind,
      subjectKeys: keys,
      keyIds: ['i1', 'i2'],
      companyId: null,
      requestedBy: 'test',
    });
    return eraseSubjectWebhooks(db.knex, id);
  };
  const laneOf = async (webhookId: string) =>
    (
      await db.knex.raw(
        `SELECT l.* FROM ordering_lanes l JOIN ordering_places p ON p.lane_id = l.id WHERE p.webhook_id = ?`,
        [webhookId],
      )
    ).rows[0] as {
      id: string;
      key_digest: Buffer | null;
      key_sealed: Buffer | null;
      key_text: string | null;
      last_seq: string;
      index_key_id: string | null;
    };
  /** What could name the candidate in a lane: the key, its digest under each index key, the subject's keys, and any sealed form seen. */
  const tracesOf = (candidateId: string, sealed: Buffer[]): string[] => {
    const key = `candidate:${candidateId}`;
    return [
      key,
      candidateId,
      ...[i1, i2].map((k) => laneDigest(k, key).toString('hex')),
      ...[i1, i2].flatMap((k) => [
        subjectKey(k.key, 'candidate_id', candidateId)!,
        subjectKey(k.key, 'email', `${candidateId}@example.org`)!,
      ]),
      ...sealed.map((form) => form.toString('hex')),
    ];
  };
  /** Every row of the three lane tables, every column as text (row_to_json: bytea as hex), holding any of `needles`. */
  const rowsHolding = async (needles: readonly string[]): Promise<string[]> => {
    const { rows } = await db.knex.raw(`
      SELECT 'ordering_lanes ' || row_to_json(t)::text AS row FROM ordering_lanes t
      UNION ALL SELECT 'ordering_places ' || row_to_json(t)::text FROM ordering_places t
      UNION ALL SELECT 'ordering_lane_subjects ' || row_to_json(t)::text FROM ordering_lane_subjects t`);
    return (rows as Array<{ row: string }>)
      .map(({ row }) => row)
      .filter((row) => needles.some((needle) => row.includes(needle)));
  };
  const sealedOf = async (webhookId: string) => {
    const lane = await laneOf(webhookId);
    assert.ok(lane.key_sealed && lane.key_text === null, 'the lane key rests sealed');
    return lane.key_sealed;
  };

  it('the log purge deletes the lanes its batch leaves empty, with their subjects, and keeps a lane with a place left', async () => {
    const [gone, kept] = [`purge-gone-${randomUUID()}`, `purge-kept-${randomUUID()}`];
    const goneOld = await ingest(under(i1), eventFor(gone));
    const keptOld = await ingest(under(i1), eventFor(kept));
    const keptNew = await ingest(under(i1), eventFor(kept));
    const [goneLane, keptLane] = [await laneOf(goneOld), await laneOf(keptOld)];
    await deliver(goneOld, 100);
    await deliver(keptOld, 100);
    await deliver(keptNew, 1);
    assert.equal(await deleteDueRows(db.knex, new Date(Date.now() - 90 * 86_400_000)), 2);
    assert.deepEqual(await db.knex('ordering_lanes').whereIn('id', [goneLane.id, keptLane.id]).pluck('id'), [
      keptLane.id,
    ]);
    assert.equal(
      Number((await db.knex('ordering_lane_subjects').where({ lane_id: goneLane.id }).count({ n: '*' }))[0].n),
      0,
    );
    assert.ok(
      Number((await db.knex('ordering_lane_subjects').where({ lane_id: keptLane.id }).count({ n: '*' }))[0].n) > 0,
    );
    assert.deepEqual(await rowsHolding([`candidate:${gone}`, laneDigest(i1, `candidate:${gone}`).toString('hex')]), []);
  });

  it('a start that certainly failed takes its lane with its row when that was its only place', async () => {
    const [alone, shared] = [`forgot-${randomUUID()}`, `forgot-shared-${randomUUID()}`];
    const forgotten = await ingest(under(i1), eventFor(alone));
    const lane = await laneOf(forgotten);
    assert.equal(await forgetUnstartedWebhook(db.knex, forgotten), true);
    assert.deepEqual(await db.knex('ordering_lanes').where({ id: lane.id }).pluck('id'), []);
    const first = await ingest(under(i1), eventFor(shared));
    const second = await ingest(under(i1), eventFor(shared));
    assert.equal(await forgetUnstartedWebhook(db.knex, second), true);
    assert.equal(Number((await laneOf(first)).last_seq), 2, 'the lane with a place left stays');
  });

  it('an erasure after an erasure leaves no trace of the key: the lane is cleared, and the next lane of the key too', async () => {
    const candidate = `again-${randomUUID()}`;
    const first = await ingest(under(i1), eventFor(candidate));
    const sealed = [await sealedOf(first)];
    await deliver(first);
    assert.deepEqual(await erase('candidate_id', candidate), {
      webhooksFound: 1,
      deliveriesCancelled: 0,
      bodiesRemoved: 1,
    });
    assert.deepEqual(await rowsHolding(tracesOf(candidate, sealed)), []);
    // The key's next webhook opens a lane of its own (the first lost its digest), which the next erasure clears.
    const second = await ingest(under(i1), eventFor(candidate));
    assert.notEqual((await laneOf(second)).id, (await laneOf(first)).id);
    sealed.push(await sealedOf(second));
    assert.deepEqual(await erase('candidate_id', candidate), {
      webhooksFound: 1,
      deliveriesCancelled: 1,
      bodiesRemoved: 1,
    });
    assert.deepEqual(await rowsHolding(tracesOf(candidate, sealed)), []);
  });

  it('an erased head whose attempt is in flight holds its lane until that attempt ends; then no trace stays', async () => {
    const candidate = `in-flight-${randomUUID()}`;
    const head = await ingest(under(i1), eventFor(candidate));
    const sealed = [await sealedOf(head)];
    // Its first attempt claimed, its POST under way: nothing queued behind it, so no ordering sweep looks at it.
    await db.knex('webhook_events').where({ id: head }).update({ claimed_attempt: 1 });
    const id = randomUUID();
    const keys = [i1, i2].map((key) => subjectKey(key.key, 'candidate_id', candidate)!);
    await insertErasure(db.knex, {
      id,
      subjectKind: 'candidate_id',
      subjectKeys: keys,
      keyIds: ['i1', 'i2'],
      companyId: null,
      requestedBy: 'test',
    });
    assert.equal((await eraseSubjectWebhooks(db.knex, id)).webhooksFound, 1);
    const boundMs = 60_000;
    assert.deepEqual(
      await forgetErasureLanes(db.knex, id, boundMs),
      { next: [], held: 1 },
      'the attempt may still be sending',
    );
    assert.notDeepEqual(await rowsHolding(tracesOf(candidate, sealed)), [], 'the lane keeps its key meanwhile');
    // The attempt is recorded: the place settles as a gap, and the lane forgets the subject.
    await db.knex('webhook_attempts').insert({
      webhook_id: head,
      attempt: 1,
      scheduled_at: new Date(),
      started_at: new Date(),
      duration_ms: 5,
      http_status: 503,
      succeeded: false,
    });
    assert.deepEqual(await forgetErasureLanes(db.knex, id, boundMs), { next: [], held: 0 });
    assert.deepEqual(await rowsHolding(tracesOf(candidate, sealed)), []);
    // A worker lost mid-POST records nothing: the place settles once the bound after the erasure is over.
    const lost = `lost-${randomUUID()}`;
    const lostHead = await ingest(under(i1), eventFor(lost));
    const lostSealed = [await sealedOf(lostHead)];
    await db.knex('webhook_events').where({ id: lostHead }).update({ claimed_attempt: 1 });
    const second = randomUUID();
    const lostKeys = [i1, i2].map((key) => subjectKey(key.key, 'candidate_id', lost)!);
    await insertErasure(db.knex, {
      id: second,
      subjectKind: 'candidate_id',
      subjectKeys: lostKeys,
      keyIds: ['i1', 'i2'],
      companyId: null,
      requestedBy: 'test',
    });
    await eraseSubjectWebhooks(db.knex, second);
    assert.equal((await forgetErasureLanes(db.knex, second, boundMs)).held, 1);
    assert.deepEqual(await forgetErasureLanes(db.knex, second, 0), { next: [], held: 0 });
    assert.deepEqual(await rowsHolding(tracesOf(lost, lostSealed)), []);
  });

  /**
   * Two webhooks of one candidate's key: `named` names the candidate's address, `other` (the later) another
   * address only, so an erasure by e-mail does not find it; and the lane key's sealed form.
   */
  const twoOfOneKey = async (prefix: string) => {
    const candidate = `${prefix}-${randomUUID()}`;
    const named = await ingest(under(i1), eventFor(candidate));
    const other = await ingest(under(i1), eventFor(candidate, `elsewhere-${randomUUID()}@example.net`));
    return { candidate, named, other, sealed: [await sealedOf(named)] };
  };

  it('two partial erasures (by e-mail, then by candidate id) leave no trace; the first keeps the key while a webhook waits', async () => {
    const { candidate, named: byEmail, other, sealed } = await twoOfOneKey('partial');
    await deliver(byEmail);
    assert.equal((await erase('email', `${candidate}@example.org`)).webhooksFound, 1);
    const lane = await laneOf(other);
    assert.equal(
      lane.key_digest?.toString('hex'),
      laneDigest(i1, `candidate:${candidate}`).toString('hex'),
      'kept: a webhook of the key waits',
    );
    assert.equal((await placeOf(db.knex, under(i1), other))?.key, `candidate:${candidate}`);
    assert.notDeepEqual(await rowsHolding(tracesOf(candidate, sealed)), [], 'the traces are found while they rest');
    assert.equal((await erase('candidate_id', candidate)).webhooksFound, 1);
    assert.deepEqual(await rowsHolding(tracesOf(candidate, sealed)), []);
  });

  it('an erasure after the log purge took the webhook that named the subject clears its lane, found by its subjects', async () => {
    // The key's later webhook names no address of the candidate's: only the purged one did.
    const { candidate, named: old, other: later, sealed } = await twoOfOneKey('purged');
    await deliver(old, 100);
    await deliver(later, 1);
    assert.equal(await deleteDueRows(db.knex, new Date(Date.now() - 90 * 86_400_000)), 1);
    assert.ok((await laneOf(later)).key_digest, 'the lane stays: a place is left');
    assert.deepEqual(await erase('email', `${candidate}@example.org`), {
      webhooksFound: 0,
      deliveriesCancelled: 0,
      bodiesRemoved: 0,
    });
    assert.deepEqual(await rowsHolding(tracesOf(candidate, sealed)), []);
  });

  it('a lane that gets a place while the erasure waits for its lock keeps its key, and the new webhook stays ordered', async () => {
    const candidate = `race-${randomUUID()}`;
    const erased = await ingest(under(i1), eventFor(candidate));
    await deliver(erased);
    // The ingestion's transaction holds the lane's row lock, uncommitted, while the erasure runs beside it.
    const trx = await db.knex.transaction();
    const arrived = await ingest(under(i1), eventFor(candidate, `new-${randomUUID()}@example.net`), trx);
    const erasing = erase('candidate_id', candidate);
    try {
      await eventually(
        'the erasure waiting for the lane lock',
        async () => {
          const { rows } = await db.knex.raw(
            `SELECT count(*)::int AS n FROM pg_stat_activity
            WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%FOR UPDATE%'`,
          );
          return rows[0].n === 1;
        },
        10_000,
      );
    } finally {
      await trx.commit();
    }
    assert.equal((await erasing).webhooksFound, 1);
    const lane = await laneOf(arrived);
    assert.equal((await laneOf(erased)).id, lane.id);
    assert.equal(lane.key_digest?.toString('hex'), laneDigest(i1, `candidate:${candidate}`).toString('hex'));
    const turn = await takeTurn(db.knex, under(i1), webhookOf(eventFor(candidate)), `candidate:${candidate}`);
    assert.equal(turn.kind, 'queued');
  });

  it('after SUBJECT_INDEX_KEYS="i2 i1" an entity keeps its lane: the next webhook queues, skip/retry find it, reindex moves it', async () => {
    const candidate = `rotate-${randomUUID()}`;
    const key = `candidate:${candidate}`;
    const head = await ingest(under(i1), eventFor(candidate));
    const next = await ingest(under(i2, i1), eventFor(candidate));
    const lane = await laneOf(head);
    assert.equal((await laneOf(next)).id, lane.id);
    assert.equal(Number((await laneOf(next)).last_seq), 2);
    const nextEvent = (await db.knex('webhook_events').where({ id: next }).first('event_id', 'workflow_id')) as {
      event_id: string;
    };
    const again = { ...webhookOf(eventFor(candidate)), webhookId: next, eventId: nextEvent.event_id };
    const turn = await takeTurn(db.knex, under(i2, i1), again, key);
    assert.deepEqual(turn, { kind: 'queued', sequence: 2, behind: { webhookId: head, sequence: 1 } });
    assert.equal((await headOfKey(db.knex, under(i2, i1), key))?.head?.webhookId, head);

    const summary = await reindexSubjects(db.knex, under(i2, i1));
    assert.equal(summary.lanes_unreadable, 0);
    assert.ok(summary.lanes_reindexed >= 1);
    const moved = await laneOf(head);
    assert.deepEqual(
      [moved.key_digest?.toString('hex'), moved.index_key_id],
      [laneDigest(i2, key).toString('hex'), 'i2'],
    );
    assert.equal((await placeOf(db.knex, under(i2, i1), next))?.key, key, 'the sealed key opens under its new digest');
    const subjectKeys = await db.knex('ordering_lane_subjects').where({ lane_id: lane.id }).pluck('key_id');
    assert.deepEqual([...new Set(subjectKeys)], ['i2']);
    assert.ok(subjectKeys.length > 0);
    // A third webhook joins the same lane, now found under the newest key.
    const third = await ingest(under(i2, i1), eventFor(candidate));
    assert.deepEqual([(await laneOf(third)).id, Number((await laneOf(third)).last_seq)], [lane.id, 3]);
    assert.equal((await headOfKey(db.knex, under(i2, i1), key))?.head?.webhookId, head);
    // The purge's kept lane lost a webhook: its subjects under i1 cannot be made again, so i1 stays listed.
    assert.ok(summary.lanes_left.i1 > 0);
    assert.ok(!summary.keys_retired.includes('i1'));
  });

  it('two lanes of one key under two index keys: placements and skip/retry take the older, reindex leaves the other', async () => {
    const key = `candidate:twin-${randomUUID()}`;
    // Made by placements that looked under the newest key alone: one under i1, then one under i2.
    const lane = (indexKey: typeof i1) => ({
      key_digest: laneDigest(indexKey, key),
      key_text: key,
      index_key_id: indexKey.id,
    });
    const [older] = await db.knex('ordering_lanes').insert(lane(i1)).returning('id');
    const [younger] = await db.knex('ordering_lanes').insert(lane(i2)).returning('id');
    const event = () => ({ ...eventFor(`twin-${randomUUID()}`), ordering_key: key });
    const [first, second] = [await ingest(under(i2, i1), event()), await ingest(under(i2, i1), event())];
    assert.deepEqual([(await laneOf(first)).id, (await laneOf(second)).id], [older.id, older.id]);
    assert.equal(Number((await laneOf(second)).last_seq), 2);
    assert.equal((await headOfKey(db.knex, under(i2, i1), key))?.head?.webhookId, first);
    const summary = await reindexSubjects(db.knex, under(i2, i1));
    assert.ok(summary.lanes_left.i1 >= 1);
    const digests = await db
      .knex('ordering_lanes')
      .whereIn('id', [older.id, younger.id])
      .orderBy('id')
      .pluck('key_digest');
    const expected = [i1, i2].map((indexKey) => laneDigest(indexKey, key).toString('hex'));
    assert.deepEqual(
      digests.map((d: Buffer) => d.toString('hex')),
      expected,
    );
    assert.equal(Number((await db.knex('ordering_places').where({ lane_id: younger.id }).count({ n: '*' }))[0].n), 0);
  });
});
