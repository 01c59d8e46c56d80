// Migration 025 over lanes made before it, on real PostgreSQL: a lane learns the subjects of the webhooks it still
// has (with their index key id); a lane whose webhooks the purge already took is deleted; one with places stays.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { migrateLatest, migrateUp, pendingMigrations } from '../../db/migrate';
import { useTestDatabase } from '../support/database';

describe('migration 025 over existing lanes', () => {
  const db = useTestDatabase({ empty: true });

  it('fills the subjects of lanes with places and deletes the lanes with none', async () => {
    while ((await pendingMigrations(db.knex))[0] !== '025_lane_subjects') await migrateUp(db.knex);
    const webhook = randomUUID();
    await db.knex('webhook_events').insert({
      id: webhook,
      event_id: `m-${webhook}`,
      event_type: 'candidate',
      action: 'new',
      body: '{}',
      subject_keys: ['aa', 'bb'],
      subject_key_id: 'k1',
    });
    const [kept] = await db
      .knex('ordering_lanes')
      .insert({ key_digest: Buffer.from('kept'), key_text: 'candidate:kept', last_seq: 2 })
      .returning('id');
    const [empty] = await db
      .knex('ordering_lanes')
      .insert({ key_digest: Buffer.from('empty'), key_text: 'candidate:empty', last_seq: 1 })
      .returning('id');
    await db.knex('ordering_places').insert({ webhook_id: webhook, lane_id: kept.id, seq: 2 });

    assert.equal((await migrateLatest(db.knex))[0], '025_lane_subjects');
    assert.deepEqual(await db.knex('ordering_lanes').whereIn('id', [kept.id, empty.id]).pluck('key_text'), [
      'candidate:kept',
    ]);
    assert.deepEqual(
      await db.knex('ordering_lane_subjects').orderBy('subject_key').select('subject_key', 'lane_id', 'key_id'),
      [
        { subject_key: 'aa', lane_id: kept.id, key_id: 'k1' },
        { subject_key: 'bb', lane_id: kept.id, key_id: 'k1' },
      ],
    );
  });
});
